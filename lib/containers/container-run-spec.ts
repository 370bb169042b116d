// A container's record in the runtime's words: the RunSpec of a start (its networking's namespace and /etc files,
// its volumes' mounts and the namespaces of the containers it joins are resolved here; the host's and the image's
// parts by the runtime) and the root filesystem request of a create. Mounts arrive resolved (lib/volumes parses them
// at create).
import { readFile } from 'node:fs/promises'
import type { ImageProvider } from '../image/types.js'
import type { ContainerNetworking } from './container-networking.js'
import type { MountSpec } from '../runtime/oci-spec.js'
import { shareableShmDir } from '../runtime/container-runtime.js'
import type { NetworkNamespace, PublishSpec, RootfsRequest, RunSpec } from '../runtime/run-spec.js'
import type { RuntimeBinary } from '../runtime/runtimes.js'
import type { ContainerVolumes } from '../volumes/container-volumes.js'
import type { ContainerHandle } from './container-handle.js'
import { monitorRotation } from './log-config.js'
import { resolveNamespaces } from './run-options.js'
import { DEFAULT_SHM_SIZE } from './create-defaults.js'
import { linkEnv } from '../network/link-env.js'
import type { LegacyLink } from '../network/sandboxes.js'

export interface RunSpecSourcesOptions {
  images: ImageProvider
  /** Networking's part (the namespace, hosts and resolv.conf); absent: loopback only. */
  network?: Pick<ContainerNetworking, 'setup'>
  /** Volumes' part (the mounts' runtime form); absent: bind mounts as resolved. */
  volumes?: { runtimeMounts: ContainerVolumes['runtimeMounts'] }
  /** Another container by reference, for the --pid/--ipc container:NAME modes. */
  peer: (ref: string) => ContainerHandle | undefined
}


/** The default hosts file of a container without networking (loopback only). */
function loopbackHosts (hostname: string, extraHosts: string[]): string {
  const extra = extraHosts.map((h) => {
    const i = h.indexOf(':')
    return i === -1 ? '' : `${h.slice(i + 1)}\t${h.slice(0, i)}\n`
  }).join('')
  return '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\n' +
    'ff00::0\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n' + `127.0.1.1\t${hostname}\n` + extra
}

export class RunSpecSources {
  private readonly o: RunSpecSourcesOptions

  constructor (o: RunSpecSourcesOptions) {
    this.o = o
  }

  /** The root filesystem of a container (its image's layers; none when the image is gone). */
  async rootfs (c: ContainerHandle): Promise<RootfsRequest> {
    const image = await this.o.images.resolveImage(c.rec.imageId).catch(() => null)
    const layers = image === null ? [] : await this.o.images.layerPaths(image)
    return { paths: c.rootfs, kind: c.rec.rootfsKind, layers, imageId: c.rec.imageId }
  }

  /**
   * What a start runs, with `runtime`. Networking is set up here (the namespace to make or join, the /etc files): a
   * failure of the start after this releases it.
   */
  async runSpec (c: ContainerHandle, runtime: RuntimeBinary): Promise<RunSpec> {
    const rec = c.rec
    const cfg = rec.config
    const run = rec.run
    const hostname = cfg.hostname !== '' ? cfg.hostname : c.id.slice(0, 12)
    // the three parts at once (each waits on its own files); all settle before a failure is reported, so that the
    // start's undoing (networking released, volumes let go) never runs beside one still under way
    const [networked, rooted, mounted] = await Promise.allSettled([this.networking(c, hostname), this.rootfs(c), this.mounts(c)])
    if (networked.status === 'rejected') throw networked.reason
    const { net, etc, resolver, legacyLinks, publish } = networked.value
    const ns = resolveNamespaces(run, (ref) => {
      const p = this.o.peer(ref)
      return p === undefined ? undefined : { id: p.id, pid: p.rec.state.pid, running: p.rec.state.status === 'running' || p.rec.state.status === 'paused', ipcMode: p.rec.run.ipcMode, shmDir: shareableShmDir(p.dir) }
    }, shareableShmDir(c.dir))
    if (rooted.status === 'rejected') throw rooted.reason
    if (mounted.status === 'rejected') throw mounted.reason
    const rootfs = rooted.value
    const mounts = mounted.value
    const { pidsLimit, cpusetCpus, cpusetMems, blkioWeight, ...limits } = rec.resources
    const consoleSize = rec.consoleSize
    return {
      id: c.id,
      runtime,
      dir: c.dir,
      stateDir: c.stateDir,
      rootfs,
      readonlyRootfs: rec.readonlyRootfs,
      ...(rec.autoRemove ? { removeAtExit: true } : {}),
      process: {
        args: [rec.path, ...rec.args],
        env: this.environment(cfg.env, legacyLinks),
        cwd: cfg.workingDir,
        user: cfg.user,
        groupAdd: run.groupAdd,
        tty: cfg.tty,
        openStdin: cfg.openStdin,
        ...(consoleSize[0] > 0 && consoleSize[1] > 0 ? { consoleSize: { height: consoleSize[0], width: consoleSize[1] } } : {}),
        init: run.init
      },
      hostname,
      domainname: cfg.domainname,
      ...(resolver !== null ? { resolver } : {}),
      ...(publish.length > 0 ? { publish } : {}),
      etc,
      mounts: [...mounts, ...run.tmpfs.map((t) => ({ destination: t.destination, type: 'tmpfs', source: 'tmpfs', options: t.options }))],
      resources: {
        ...limits,
        ...(pidsLimit !== null ? { pidsLimit } : {}),
        ...(run.memorySwappiness !== undefined ? { memorySwappiness: run.memorySwappiness } : {}),
        disableOomKiller: run.oomKillDisable,
        cpusetCpus: cpusetCpus ?? '',
        cpusetMems: cpusetMems ?? ''
      },
      blkio: { ...(blkioWeight !== undefined ? { weight: blkioWeight } : {}), devices: rec.blkio },
      cgroupParent: rec.cgroupParent ?? '',
      privileged: rec.privileged,
      capAdd: rec.capAdd ?? [],
      capDrop: rec.capDrop ?? [],
      shmSize: rec.shmSize,
      namespaces: { net, pid: ns.pid, ipc: ns.ipc, uts: ns.uts, cgroup: run.cgroupNs, shm: ns.shm },
      ...(run.ipcMode === 'shareable' ? { shareableShm: { dir: shareableShmDir(c.dir), size: rec.shmSize > 0 ? rec.shmSize : DEFAULT_SHM_SIZE } } : {}),
      devices: run.devices,
      deviceRules: run.deviceRules,
      sysctls: run.sysctls,
      rlimits: run.ulimits,
      noNewPrivileges: run.noNewPrivileges,
      oomScoreAdj: run.oomScoreAdj,
      unmaskedPaths: run.unmaskedPaths,
      ...(run.maskedPaths !== undefined ? { maskedPaths: run.maskedPaths } : {}),
      ...(run.readonlyPaths !== undefined ? { readonlyPaths: run.readonlyPaths } : {}),
      seccomp: rec.seccomp,
      log: { path: c.logPath, ...monitorRotation(rec.log) }
    }
  }

  /**
   * The container's environment: its legacy links' variables (dockerd's <ALIAS>_PORT…, <ALIAS>_NAME, <ALIAS>_ENV_…)
   * first, its own replacing those of the same name (dockerd's ReplaceOrAppendEnvValues).
   */
  private environment (own: string[], links: LegacyLink[]): string[] {
    if (links.length === 0) return own
    const env = links.flatMap((l) => {
      const child = this.o.peer(l.containerId)
      return child === undefined ? [] : linkEnv({ name: l.name, ip: l.ip, env: child.rec.config.env, exposed: child.rec.config.exposedPorts ?? [] })
    })
    for (const e of own.filter((x) => x.includes('='))) {
      const key = e.slice(0, e.indexOf('=') + 1)
      const i = env.findIndex((x) => x.startsWith(key))
      if (i === -1) env.push(e)
      else env[i] = e
    }
    return env
  }

  private async mounts (c: ContainerHandle): Promise<MountSpec[]> {
    const mounts = c.rec.mounts ?? []
    if (this.o.volumes !== undefined) return await this.o.volumes.runtimeMounts(c.id, mounts, c.rec.run.tmpfs.map((t) => t.destination))
    return mounts.filter((m) => m.type === 'bind').map((m) => ({ destination: m.destination, type: 'bind', source: m.source, options: ['rbind', m.propagation, m.rw ? 'rw' : 'ro'] }))
  }

  /** The network namespace, the /etc files and the published ports: networking's, or loopback only with the host's resolvers. */
  private async networking (c: ContainerHandle, hostname: string): Promise<{ net: NetworkNamespace, etc: RunSpec['etc'], resolver: string | null, legacyLinks: LegacyLink[], publish: PublishSpec[] }> {
    const rec = c.rec
    const net = this.o.network
    if (net !== undefined) {
      const sb = await net.setup(c.id, {
        hostname,
        domainname: rec.config.domainname,
        extraHosts: rec.extraHosts ?? [],
        dns: rec.dns.servers,
        dnsSearch: rec.dns.search,
        dnsOptions: rec.dns.options
      })
      const publish = sb.ports.map((p) => ({ proto: p.proto, hostIp: p.hostIp, hostPort: p.hostPort, targetIp: p.containerIp, targetPort: p.containerPort }))
      return { net: sb.netns, etc: { hosts: sb.hosts, resolvConf: sb.resolvConf }, resolver: sb.resolver, legacyLinks: sb.legacyLinks, publish }
    }
    const dns = rec.dns.servers
    let resolv: string
    if (dns.length > 0) {
      resolv = dns.map((d) => `nameserver ${d}\n`).join('')
    } else {
      const host = await readFile('/etc/resolv.conf', 'utf8').catch(() => '')
      // loopback resolvers are unreachable from the container's own network namespace
      resolv = host.split('\n').filter((l) => !/^\s*nameserver\s+(127\.|::1)/.test(l)).join('\n')
    }
    const search = rec.dns.search
    if (search.length > 0) resolv += `\nsearch ${search.join(' ')}\n`
    return { net: { kind: 'new' }, etc: { hosts: loopbackHosts(hostname, rec.extraHosts ?? []), resolvConf: resolv }, resolver: null, legacyLinks: [], publish: [] }
  }
}
