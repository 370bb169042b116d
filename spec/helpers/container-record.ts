// A container handle made from a create body by the engine's own decoders, without a daemon: what the route tests'
// fake backends hand the routes (the handle and its record are real; nothing runs).
import { ContainerHandle } from '../../lib/containers/container-handle.js'
import { decodeCreateRequest } from '../../lib/containers/create-request.js'
import { checkContainerConfig } from '../../lib/containers/container-config.js'
import { decodeRunOptions } from '../../lib/containers/run-options.js'
import { decodeLogConfig } from '../../lib/containers/log-config.js'
import { newState, type ContainerRecord } from '../../lib/containers/container.js'

const HOST = { cpus: '0-1', mems: '0', cpuCount: 2, blkioWeight: true, blkioThrottle: true }

export function testContainer (id: string, name: string, body: Record<string, unknown> = {}, dir = '/nonexistent'): ContainerHandle {
  const req = decodeCreateRequest({ Image: 'busybox', Cmd: ['sh'], ...body })
  const { config, settings: s } = req
  checkContainerConfig(config)
  const entry = [...(config.entrypoint ?? []), ...(config.cmd ?? [])]
  const lc = { Type: req.logConfig.type === '' ? 'json-file' : req.logConfig.type, Config: req.logConfig.config }
  const log = decodeLogConfig(lc)
  const rec: ContainerRecord = {
    id,
    name: `/${name}`,
    created: (BigInt(Date.UTC(2026, 10, 28)) * 1_000_000n).toString(),
    image: config.image,
    imageId: 'sha256:' + 'b'.repeat(64),
    path: entry[0] ?? '',
    args: entry.slice(1),
    config,
    ...s,
    log: { driver: log.driver, options: lc.Config, maxSize: log.maxSize, maxFiles: log.maxFiles },
    run: decodeRunOptions({ namespaces: s.namespaces, process: s.process, devices: s.devices, networkMode: s.networkMode, resources: s.resources }, HOST).options,
    state: newState(),
    restartCount: 0,
    rootfsKind: 'overlay',
    manuallyStopped: false,
    shimPid: 0,
    mounts: []
  }
  return new ContainerHandle(rec, dir, dir)
}
