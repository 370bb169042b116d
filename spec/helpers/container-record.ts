// A container handle made from a create body by the engine's own decoders, without a daemon: what the route tests'
// fake backends hand the routes (the handle and its record are real; nothing runs).
import { ContainerHandle } from '../../lib/containers/container-handle.js'
import { decodeCreateBody } from '../../lib/containers/create-config.js'
import { containerConfigOf, decodeSettings, limitsOf, runInputsOf } from '../../lib/containers/container-settings.js'
import { decodeRunOptions } from '../../lib/containers/run-options.js'
import { newState, type ContainerRecord } from '../../lib/containers/container.js'

const HOST = { cpus: '0-1', mems: '0', cpuCount: 2, blkioWeight: true, blkioThrottle: true }

export function testContainer (id: string, name: string, body: Record<string, unknown> = {}, dir = '/nonexistent'): ContainerHandle {
  const { config: requested, hostConfig } = decodeCreateBody({ Image: 'busybox', Cmd: ['sh'], ...body })
  const config = containerConfigOf(requested)
  const entry = [...(config.entrypoint ?? []), ...(config.cmd ?? [])]
  const rec: ContainerRecord = {
    id,
    name: `/${name}`,
    created: (BigInt(Date.UTC(2026, 10, 28)) * 1_000_000n).toString(),
    image: config.image,
    imageId: 'sha256:' + 'b'.repeat(64),
    path: entry[0] ?? '',
    args: entry.slice(1),
    config,
    ...decodeSettings(hostConfig),
    ...limitsOf(hostConfig),
    run: decodeRunOptions(runInputsOf(hostConfig), HOST).options,
    state: newState(),
    restartCount: 0,
    rootfsKind: 'overlay',
    manuallyStopped: false,
    shimPid: 0,
    mounts: []
  }
  return new ContainerHandle(rec, dir, dir)
}
