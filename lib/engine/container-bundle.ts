// A container's OCI bundle: the root filesystem a create prepares, and at each start the root filesystem mounted (or
// left to the monitor: the overlay decision), the /etc files it bind-mounts (hosts, hostname, resolv.conf), its
// mounts and the runtime spec (config.json). Mounts arrive resolved (lib/volumes parses them at create).
import { readFile, writeFile, stat } from 'node:fs/promises'
import { PRIVATE_FILE, CONTAINER_READ_FILE } from '../util/private-modes.js'
import os from 'node:os'
import { join } from 'node:path'
import type { ImageProvider, ImageRecord } from '../image/types.js'
import type { NetworkService } from '../network/network-service.js'
import type { LegacyLink } from '../network/sandboxes.js'
import { linkEnv } from '../network/link-env.js'
import { buildRuntimeSpec, DEFAULT_PATH_ENV, type MountSpec } from '../runtime/oci-spec.js'
import { containerCgroupPath } from '../runtime/cgroups.js'
import { mountRootfs, copyLayers, currentMounts, overlayOptions, prepareOverlay, mountShm, unmountRootfs } from '../runtime/rootfs.js'
import { goArch } from '../runtime/seccomp.js'
import { resolveUser, readUserFiles, checkUserFiles, supplementaryGids, type UserFiles } from '../runtime/user.js'
import type { ContainerVolumes } from '../volumes/container-volumes.js'
import type { ContainerHandle } from './container-handle.js'
import type { ContainerRecord } from './container.js'
import { resolveNamespaces } from './run-options.js'
import { blockIOLimits, deviceNode, hostDevices, initMount, INIT_DEST, type HostFacts } from '../runtime/host-facts.js'

export interface ContainerBundlesOptions {
  images: ImageProvider
  hostNofileHard: number
  allCaps: readonly string[]
  /** Networking's part (the namespace, hosts and resolv.conf); absent: loopback only. */
  network?: Pick<NetworkService, 'setup'>
  /** Volumes' part (the mounts' runtime form, copy-up); absent: bind mounts as resolved. */
  volumes?: Pick<ContainerVolumes, 'runtimeMounts' | 'wantsCopyUp' | 'copyUp'>
  /** The host's CPUs, memory nodes and init binary (read when the engine starts). */
  hostFacts: () => HostFacts
  /** Another container by reference, for the --pid/--ipc container:NAME modes. */
  peer: (ref: string) => ContainerHandle | undefined
}

/** What one mount(2) data page holds, with room for the terminating NUL. */
const MOUNT_DATA_MAX = 4000

async function pathExists (p: string): Promise<boolean> {
  try { await stat(p); return true } catch { return false }
}

export class ContainerBundles {
  private readonly o: ContainerBundlesOptions
  /** Whether an overlay mount has worked here (known after the first create that mounted one). */
  private overlayWorks = false
  /**
   * /etc/passwd and /etc/group of images as a fresh container sees them, read when a container of the image was
   * first mounted: a start whose writable layer has no /etc resolves its user from these and lets the monitor
   * mount the root filesystem (one mount(2)) instead of a mount(8) by the daemon.
   */
  private readonly imageUserFiles = new Map<string, UserFiles>()

  constructor (o: ContainerBundlesOptions) {
    this.o = o
  }

  /**
   * At create: the root filesystem (an overlay prepared, or a copy where overlay fails), volumes copied up. The overlay
   * is mounted here only to learn what it needs (does overlay work, the image's user files, the copy-up) and is
   * unmounted again: every container's is mounted at its start.
   */
  async createRootfs (c: ContainerHandle, image: ImageRecord): Promise<ContainerRecord['rootfsKind']> {
    const mounts = c.rec.mounts ?? []
    const layers = await this.o.images.layerPaths(image)
    const copyUp = this.o.volumes?.wantsCopyUp(mounts) === true
    if (this.overlayWorks && layers.length > 0 && this.imageUserFiles.has(image.id) && !copyUp) {
      // nothing needs the tree before the start, and the monitor mounts it then
      await prepareOverlay(c.rootfs)
      return 'overlay'
    }
    const kind = await mountRootfs(c.rootfs, layers, 'overlay')
    if (kind === 'copy') await copyLayers(c.rootfs, layers)
    else {
      this.overlayWorks = true
      this.rememberUserFiles(image.id, await readUserFiles(c.rootfs.merged))
    }
    if (copyUp) await this.o.volumes?.copyUp(c.rootfs.merged, mounts)
    // mounted at start like every container (the monitor mounts it then), not from create on
    if (kind === 'overlay') await unmountRootfs(c.rootfs)
    return kind
  }

  private rememberUserFiles (imageId: string, files: UserFiles): void {
    this.imageUserFiles.delete(imageId)
    this.imageUserFiles.set(imageId, files)
    // a bounded cache: the oldest image goes first
    if (this.imageUserFiles.size > 64) this.imageUserFiles.delete(this.imageUserFiles.keys().next().value as string)
  }

  /**
   * At start: the root filesystem mounted, or the overlay options the monitor mounts it with (`overlay`; then
   * `userFiles` are the image's, which the user is resolved from).
   */
  async mountForStart (c: ContainerHandle): Promise<{ overlay?: string, userFiles?: UserFiles }> {
    const image = await this.o.images.resolveImage(c.rec.imageId).catch(() => null)
    let overlay: string | undefined
    let userFiles: UserFiles | undefined
    if (c.rec.rootfsKind === 'overlay') {
      const layers = image === null ? [] : await this.o.images.layerPaths(image)
      userFiles = this.imageUserFiles.get(c.rec.imageId)
      // the image's user files are the container's while its writable layer has no /etc of its own
      const options = overlayOptions(c.rootfs, layers)
      // mount(2) takes the options as one page; mount(8) passes long lower lists through libmount's newer API
      if (userFiles !== undefined && layers.length > 0 && options.length < MOUNT_DATA_MAX &&
          !(await currentMounts()).has(c.rootfs.merged) && !(await pathExists(join(c.rootfs.upper, 'etc')))) {
        overlay = options
      } else {
        userFiles = undefined
        await mountRootfs(c.rootfs, layers, 'overlay')
      }
    }
    return { ...(overlay !== undefined ? { overlay } : {}), ...(userFiles !== undefined ? { userFiles } : {}) }
  }

  /**
   * At start: the /etc files and config.json written (throws when the spec cannot be built). Returns the namespace
   * the container's monitor opens its embedded DNS resolver in (null: none).
   */
  async writeSpec (c: ContainerHandle, userFiles: UserFiles | undefined): Promise<{ resolver: string | null }> {
    const net = await this.writeEtcFiles(c)
    const spec = await this.runtimeSpec(c, userFiles, net.netns, this.linkedEnv(net.legacyLinks))
    await writeFile(join(c.dir, 'config.json'), JSON.stringify(spec), { mode: PRIVATE_FILE })
    return { resolver: net.resolver }
  }

  /** The environment legacy links give (dockerd's <ALIAS>_PORT…, <ALIAS>_NAME, <ALIAS>_ENV_…). */
  private linkedEnv (links: LegacyLink[]): string[] {
    return links.flatMap((l) => {
      const child = this.o.peer(l.containerId)
      return child === undefined ? [] : linkEnv({ name: l.name, ip: l.ip, env: child.rec.config.env, exposed: child.rec.config.exposedPorts ?? [] })
    })
  }

  /** Writes hosts, hostname and resolv.conf; returns the network namespace to join (see RuntimeSpecInput.netns). */
  private async writeEtcFiles (c: ContainerHandle): Promise<{ netns: string | null | undefined, resolver: string | null, legacyLinks: LegacyLink[] }> {
    const hostname = c.rec.config.hostname !== '' ? c.rec.config.hostname : c.id.slice(0, 12)
    const net = this.o.network
    if (net !== undefined) {
      const sb = await net.setup(c.id, {
        hostname,
        domainname: c.rec.config.domainname,
        extraHosts: c.rec.extraHosts ?? [],
        dns: c.rec.dns.servers,
        dnsSearch: c.rec.dns.search,
        dnsOptions: c.rec.dns.options
      })
      await writeFile(join(c.dir, 'hosts'), sb.hosts, { mode: CONTAINER_READ_FILE })
      await writeFile(join(c.dir, 'hostname'), hostname + '\n', { mode: CONTAINER_READ_FILE })
      await writeFile(join(c.dir, 'resolv.conf'), sb.resolvConf, { mode: CONTAINER_READ_FILE })
      return { netns: sb.netnsPath, resolver: sb.resolver, legacyLinks: sb.legacyLinks }
    }
    const extra = (c.rec.extraHosts ?? []).map((h) => {
      const i = h.indexOf(':')
      return i === -1 ? '' : `${h.slice(i + 1)}\t${h.slice(0, i)}\n`
    }).join('')
    const hosts = '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\n' +
      'ff00::0\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n' + `127.0.1.1\t${hostname}\n` + extra
    await writeFile(join(c.dir, 'hosts'), hosts, { mode: CONTAINER_READ_FILE })
    await writeFile(join(c.dir, 'hostname'), hostname + '\n', { mode: CONTAINER_READ_FILE })
    const dns = c.rec.dns.servers
    let resolv: string
    if (dns.length > 0) {
      resolv = dns.map((d) => `nameserver ${d}\n`).join('')
    } else {
      const host = await readFile('/etc/resolv.conf', 'utf8').catch(() => '')
      // loopback resolvers are unreachable from the container's own network namespace
      resolv = host.split('\n').filter((l) => !/^\s*nameserver\s+(127\.|::1)/.test(l)).join('\n')
    }
    const search = c.rec.dns.search
    if (search.length > 0) resolv += `\nsearch ${search.join(' ')}\n`
    await writeFile(join(c.dir, 'resolv.conf'), resolv, { mode: CONTAINER_READ_FILE })
    return { netns: undefined, resolver: null, legacyLinks: [] }
  }

  private async bindMounts (c: ContainerHandle): Promise<MountSpec[]> {
    const mounts = c.rec.mounts ?? []
    if (this.o.volumes !== undefined) return await this.o.volumes.runtimeMounts(c.id, mounts, c.rec.run.tmpfs.map((t) => t.destination))
    return mounts.filter((m) => m.type === 'bind').map((m) => ({ destination: m.destination, type: 'bind', source: m.source, options: ['rbind', m.propagation, m.rw ? 'rw' : 'ro'] }))
  }

  /** The OCI config; users resolve from `userFiles` when given (the root filesystem is not mounted yet). */
  private async runtimeSpec (c: ContainerHandle, userFiles?: UserFiles, netns?: string | null, linked: string[] = []): Promise<Record<string, unknown>> {
    const cfg = c.rec.config
    const rec = c.rec
    const { pidsLimit, cpusetCpus, cpusetMems, blkioWeight, ...limits } = rec.resources
    // the runtime reads these files itself (runc init, blocking reads): refused before it could hang on them
    const files = userFiles ?? await readUserFiles(c.rootfs.merged)
    checkUserFiles(files)
    const user = await resolveUser(files, cfg.user)
    const run = rec.run
    const ns = resolveNamespaces(run, (ref) => {
      const p = this.o.peer(ref)
      return p === undefined ? undefined : { id: p.id, pid: p.rec.state.pid, running: p.rec.state.status === 'running' || p.rec.state.status === 'paused', ipcMode: p.rec.run.ipcMode, shmDir: join(p.dir, 'shm') }
    }, join(c.dir, 'shm'))
    if (run.ipcMode === 'shareable') await mountShm(join(c.dir, 'shm'), rec.shmSize > 0 ? rec.shmSize : 64 * 1024 * 1024)
    const groupFile = run.groupAdd.length === 0 ? '' : files.group
    const devices = [
      ...(rec.privileged ? (await hostDevices()).map((node) => ({ node, access: 'rwm' })) : []),
      ...await Promise.all(run.devices.map(async (d) => ({ node: await deviceNode(d.pathOnHost, d.pathInContainer), access: d.permissions })))
    ]
    const initPath = run.init ? this.o.hostFacts().initPath : undefined
    const hostname = cfg.hostname !== '' ? cfg.hostname : c.id.slice(0, 12)
    // a bare NAME (`-e NAME` with NAME unset in the client) is left out of the environment, as dockerd does
    // links' variables first; the container's own replace those of the same name (dockerd's ReplaceOrAppendEnvValues)
    const env = [...linked]
    for (const e of cfg.env.filter((x) => x.includes('='))) {
      const key = e.slice(0, e.indexOf('=') + 1)
      const i = env.findIndex((x) => x.startsWith(key))
      if (i === -1) env.push(e)
      else env[i] = e
    }
    if (!env.some((e) => e.startsWith('PATH='))) env.unshift(DEFAULT_PATH_ENV)
    if (!env.some((e) => e.startsWith('HOSTNAME='))) env.push(`HOSTNAME=${hostname}`)
    if (cfg.tty && !env.some((e) => e.startsWith('TERM='))) env.push('TERM=xterm')
    if (!env.some((e) => e.startsWith('HOME='))) env.push(`HOME=${user.home === '' ? '/' : user.home}`)
    const consoleSize = rec.consoleSize
    const etc: MountSpec[] = [
      { destination: '/etc/resolv.conf', type: 'bind', source: join(c.dir, 'resolv.conf'), options: ['rbind', 'rprivate'] },
      { destination: '/etc/hostname', type: 'bind', source: join(c.dir, 'hostname'), options: ['rbind', 'rprivate'] },
      { destination: '/etc/hosts', type: 'bind', source: join(c.dir, 'hosts'), options: ['rbind', 'rprivate'] }
    ]
    return buildRuntimeSpec({
      rootfs: c.rootfs.merged,
      readonlyRootfs: rec.readonlyRootfs,
      hostname,
      domainname: cfg.domainname,
      process: {
        args: initPath !== undefined ? [INIT_DEST, '--', c.rec.path, ...c.rec.args] : [c.rec.path, ...c.rec.args],
        env,
        cwd: cfg.workingDir === '' ? '/' : cfg.workingDir,
        uid: user.uid,
        gid: user.gid,
        additionalGids: supplementaryGids(user, run.groupAdd, groupFile),
        terminal: cfg.tty,
        ...(consoleSize[0] > 0 && consoleSize[1] > 0 ? { consoleSize: { height: consoleSize[0], width: consoleSize[1] } } : {})
      },
      mounts: [...etc, ...await this.bindMounts(c), ...run.tmpfs.map((t) => ({ destination: t.destination, type: 'tmpfs', source: 'tmpfs', options: t.options })),
        ...(initPath !== undefined ? [initMount(initPath)] : [])],
      resources: {
        ...limits,
        ...(pidsLimit !== null ? { pidsLimit } : {}),
        ...(run.memorySwappiness !== undefined ? { memorySwappiness: run.memorySwappiness } : {}),
        disableOomKiller: run.oomKillDisable,
        cpusetCpus: cpusetCpus ?? '',
        cpusetMems: cpusetMems ?? '',
        blockIO: await blockIOLimits(blkioWeight, rec.blkio)
      },
      cgroupsPath: containerCgroupPath(c.id, rec.cgroupParent ?? ''),
      hostNofileHard: this.o.hostNofileHard,
      privileged: rec.privileged,
      capAdd: rec.capAdd ?? [],
      capDrop: rec.capDrop ?? [],
      shmSize: rec.shmSize,
      ...(netns !== undefined ? { netns } : {}),
      pidNs: ns.pid,
      ipcNs: ns.ipc,
      utsNs: ns.uts,
      shm: ns.shm,
      rlimits: run.ulimits,
      sysctl: run.sysctls,
      devices,
      deviceRules: run.deviceRules,
      noNewPrivileges: run.noNewPrivileges,
      oomScoreAdj: run.oomScoreAdj,
      unmaskedPaths: run.unmaskedPaths,
      ...(run.maskedPaths !== undefined ? { maskedPaths: run.maskedPaths } : {}),
      ...(run.readonlyPaths !== undefined ? { readonlyPaths: run.readonlyPaths } : {}),
      cgroupNs: run.cgroupNs,
      seccomp: { choice: rec.seccomp, arch: goArch(), kernel: os.release() }
    }, this.o.allCaps)
  }
}
