// What the container routes need beyond the lifecycle: files in and out of a container's root filesystem (archive
// HEAD/GET/PUT, export), its changes, its processes (top) and its resource usage (stats).
//
// Every path a client names is resolved inside the container's root filesystem as if it were `/` (util/scoped-fs.ts):
// symlinks in the container point into the container, never at the host, also while the container runs and changes
// its files.
import { execFile } from 'node:child_process'
import { readFile, open, lstat } from 'node:fs/promises'
import { constants as fsc, type BigIntStats, type Stats } from 'node:fs'
import os from 'node:os'
import { posix } from 'node:path'
import type { Readable } from 'node:stream'
import { conflict, invalidArgument, notFound, notImplemented, internal } from '../errors.js'
import { ScopedRoot, at, openDirAt, type Located } from '../util/scoped-fs.js'
import { addEntry, addFromDir, addTree, headerFor, tarStreamOf, extractInto, type LinkTable } from '../stream/tar-tree.js'
import { containerChanges, type Change } from '../image/diff.js'
import { decompressed } from '../image/image-service.js'
import type { ImageProvider } from '../image/types.js'
import type { Runc } from '../runtime/runc.js'
import type { EventBus } from '../events/event-bus.js'
import type { ContainerService } from './container-service.js'
import type { ContainerHandle } from './container-handle.js'
import { isRunning } from './container.js'
import { ZERO_TIME } from '../util/time.js'

export interface ContainerFilesOptions {
  containers: ContainerService
  images: ImageProvider
  runc: Runc
  events: EventBus
}

/** The archive stat (X-Docker-Container-Path-Stat); `mode` carries Go os.FileMode bits. */
export interface PathStat { name: string, size: number, mode: number, mtime: string, linkTarget: string }

export interface TopResult { Titles: string[], Processes: string[][] }

/** The /etc files Berth bind-mounts from the container's directory, by their path in the container. */
const ETC_BIND_FILES = new Map([['/etc/hostname', 'hostname'], ['/etc/hosts', 'hosts'], ['/etc/resolv.conf', 'resolv.conf']])

// Go os.FileMode type bits (io/fs), not Unix st_mode bits.
const GO_MODE_DIR = 2 ** 31
const GO_MODE_SYMLINK = 2 ** 27
const GO_MODE_DEVICE = 2 ** 26
const GO_MODE_NAMED_PIPE = 2 ** 25
const GO_MODE_SOCKET = 2 ** 24
const GO_MODE_SETUID = 2 ** 23
const GO_MODE_SETGID = 2 ** 22
const GO_MODE_CHAR_DEVICE = 2 ** 21
const GO_MODE_STICKY = 2 ** 20

/** st_mode → Go's os.FileMode (what `docker cp` calls IsDir() on). */
export function goFileMode (mode: number): number {
  let m = mode & 0o777
  switch (mode & fsc.S_IFMT) {
    case fsc.S_IFDIR: m += GO_MODE_DIR; break
    case fsc.S_IFLNK: m += GO_MODE_SYMLINK; break
    case fsc.S_IFIFO: m += GO_MODE_NAMED_PIPE; break
    case fsc.S_IFSOCK: m += GO_MODE_SOCKET; break
    case fsc.S_IFBLK: m += GO_MODE_DEVICE; break
    case fsc.S_IFCHR: m += GO_MODE_DEVICE + GO_MODE_CHAR_DEVICE; break
  }
  if ((mode & 0o4000) !== 0) m += GO_MODE_SETUID
  if ((mode & 0o2000) !== 0) m += GO_MODE_SETGID
  if ((mode & 0o1000) !== 0) m += GO_MODE_STICKY
  return m
}

/** Go's time.Time JSON form (RFC 3339 with nanoseconds, trailing zeros trimmed), in UTC. */
export function rfc3339Nano (ns: bigint): string {
  const sec = ns / 1_000_000_000n
  const frac = ns % 1_000_000_000n
  const base = new Date(Number(sec) * 1000).toISOString().slice(0, 19)
  const f = frac === 0n ? '' : '.' + frac.toString().padStart(9, '0').replace(/0+$/, '')
  return `${base}${f}Z`
}

/** Go's filepath.Base for '/'-paths. */
function goBase (p: string): string {
  const t = p.replace(/\/+$/, '')
  if (t === '') return p === '' ? '.' : '/'
  return t.slice(t.lastIndexOf('/') + 1)
}

/** dockerd's `PreserveTrailingDotOrSeparator(filepath.Join("/", path), path)`. */
export function containerAbsPath (path: string): string {
  let abs = posix.join('/', path)
  if (path.endsWith('/.') || path === '.') { if (!abs.endsWith('/.')) abs = abs === '/' ? '/.' : `${abs}/.` } else if (path.endsWith('/') && !abs.endsWith('/')) abs += '/'
  return abs
}

function errnoOf (err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code
}

/** The argument check dockerd applies to ps_args (a `pid` column under another name would hide the PID). */
function validatePsArgs (psArgs: string): void {
  for (const m of psArgs.matchAll(/\s+([^\s]*)=\s*(PID[^\s]*)/g)) {
    if (m[1] !== 'pid') throw invalidArgument(`specifying "${m[1] as string}=${m[2] as string}" is not allowed`)
  }
}

/** dockerd's parsePSOutput: keep the rows of the container's PIDs (and their thread rows), merge overhanging fields. */
export function parsePsOutput (output: string, pids: number[]): TopResult {
  const lines = output.split('\n')
  const titles = (lines[0] ?? '').split(/[\t\n\f\r ]+/).filter((f) => f !== '')
  const pidIndex = titles.indexOf('PID')
  if (pidIndex === -1) throw internal("Couldn't find PID field in ps output")
  const want = new Set(pids)
  const processes: string[][] = []
  const append = (fields: string[]): void => {
    processes.push([...fields.slice(0, titles.length - 1), fields.slice(titles.length - 1).join(' ')])
  }
  let inContainer = false
  for (const line of lines.slice(1)) {
    if (line === '') continue
    const fields = line.split(/[\t\n\f\r ]+/).filter((f) => f !== '')
    const pidField = fields[pidIndex] ?? ''
    if (pidField === '-') { if (inContainer) append(fields); continue }
    if (!/^\d+$/.test(pidField)) throw internal(`Unexpected pid '${pidField}'`)
    inContainer = want.has(Number(pidField))
    if (inContainer) append(fields)
  }
  return { Titles: titles, Processes: processes }
}

async function run (cmd: string, args: string[]): Promise<string> {
  return await new Promise((resolve, reject) => {
    execFile(cmd, args, { maxBuffer: 64 * 1024 * 1024, timeout: 30_000 }, (err, stdout, stderr) => {
      if (err !== null) {
        const first = String(stderr).split('\n')[0] ?? ''
        reject(internal(`${cmd}: ${first !== '' ? first : err.message}`, { cause: err }))
      } else resolve(String(stdout))
    })
  })
}

async function readText (path: string): Promise<string | undefined> {
  try { return await readFile(path, 'utf8') } catch { return undefined }
}

function num (text: string | undefined): number {
  if (text === undefined) return 0
  const n = Number(text.trim())
  return Number.isFinite(n) ? n : 0
}

function keyValues (text: string | undefined): Record<string, number> {
  const out: Record<string, number> = {}
  for (const line of (text ?? '').split('\n')) {
    const [k, v] = line.trim().split(/\s+/)
    if (k !== undefined && k !== '' && v !== undefined) out[k] = Number(v)
  }
  return out
}

const CLOCK_TICKS = 100
const NS = 1_000_000_000

/** Host CPU time in ns, from the first line of /proc/stat (what dockerd reports as system_cpu_usage). */
async function systemCpuUsage (): Promise<number> {
  const line = (await readText('/proc/stat'))?.split('\n').find((l) => l.startsWith('cpu ')) ?? ''
  const ticks = line.trim().split(/\s+/).slice(1, 8).reduce((a, v) => a + Number(v), 0)
  return ticks * (NS / CLOCK_TICKS)
}

interface CpuSample { total: number, percpu: number[], kernel: number, user: number, system: number, online: number, throttling: { periods: number, throttled_periods: number, throttled_time: number } }

function zeroCpu (): Record<string, unknown> {
  return { cpu_usage: { total_usage: 0, usage_in_kernelmode: 0, usage_in_usermode: 0 }, throttling_data: { periods: 0, throttled_periods: 0, throttled_time: 0 } }
}

function cpuJson (s: CpuSample): Record<string, unknown> {
  return {
    cpu_usage: { total_usage: s.total, ...(s.percpu.length > 0 ? { percpu_usage: s.percpu } : {}), usage_in_kernelmode: s.kernel, usage_in_usermode: s.user },
    system_cpu_usage: s.system,
    online_cpus: s.online,
    throttling_data: s.throttling
  }
}

/**
 * The per-container side of the Engine API: archive, export, changes, top, stats. Errors carry their kind; texts
 * follow dockerd's where clients show them.
 */
export class ContainerFiles {
  private readonly o: ContainerFilesOptions
  private readonly cgroup2: Promise<boolean>

  constructor (o: ContainerFilesOptions) {
    this.o = o
    this.cgroup2 = readFile('/sys/fs/cgroup/cgroup.controllers').then(() => true, () => false)
  }

  private attributes (c: ContainerHandle): Record<string, string> {
    return { ...c.rec.config.Labels, image: c.rec.image, name: c.rec.name.slice(1) }
  }

  private async openRoot (ref: string): Promise<{ c: ContainerHandle, root: ScopedRoot }> {
    const c = this.o.containers.get(ref)
    await this.o.containers.ensureRootfs(c)
    return { c, root: await ScopedRoot.open(c.rootfs.merged) }
  }

  /**
   * The root to read `path` from and its path there: /etc/hostname, /etc/hosts and /etc/resolv.conf are bind-mounted
   * from the container's directory (once it has started), so they are read from there, as the container sees them.
   */
  private async openReadRoot (ref: string, path: string): Promise<{ c: ContainerHandle, root: ScopedRoot, path: string }> {
    const c = this.o.containers.get(ref)
    const name = ETC_BIND_FILES.get(posix.normalize(containerAbsPath(path)))
    if (name !== undefined && !c.removed) {
      try {
        if ((await lstat(posix.join(c.dir, name))).isFile()) return { c, root: await ScopedRoot.open(c.dir), path: `/${name}` }
      } catch { /* never started: the image's own file */ }
    }
    const { root } = await this.openRoot(ref)
    return { c, root, path }
  }

  /** Locates `path` as dockerd's Stat does: the last component is not followed unless the path ends in / or /. */
  private async locatePath (root: ScopedRoot, ref: string, path: string): Promise<{ loc: Located, st: Stats, big: BigIntStats, abs: string }> {
    const abs = containerAbsPath(path)
    const followLast = abs !== '/' && (abs.endsWith('/') || abs.endsWith('/.'))
    let loc: Located
    try {
      loc = await root.locate(abs, { followLast })
    } catch (err) {
      const code = errnoOf(err)
      if (code === 'ENOENT' || code === 'ENOTDIR') throw notFound(`Could not find the file ${path} in container ${ref}`, { cause: err })
      if (code === 'ELOOP') throw invalidArgument(`${path}: too many levels of symbolic links`, { cause: err })
      throw err
    }
    try {
      if (loc.name === '') return { loc, st: await loc.dir.stat(), big: await loc.dir.stat({ bigint: true }), abs }
      const st = await lstat(at(loc.dir, loc.name))
      // like lstat("/etc/passwd/"): a trailing separator asks for a directory
      if (followLast && !st.isDirectory()) throw Object.assign(new Error(`not a directory: ${abs}`), { code: 'ENOENT' })
      return { loc, st, big: await lstat(at(loc.dir, loc.name), { bigint: true }), abs }
    } catch (err) {
      await loc.dir.close()
      if (errnoOf(err) === 'ENOENT') throw notFound(`Could not find the file ${path} in container ${ref}`, { cause: err })
      throw err
    }
  }

  private async pathStat (root: ScopedRoot, abs: string, st: Stats, big: BigIntStats): Promise<PathStat> {
    return {
      name: goBase(abs),
      size: st.size,
      mode: goFileMode(st.mode),
      mtime: rfc3339Nano(big.mtimeNs),
      linkTarget: st.isSymbolicLink() ? await root.canonical(abs) : ''
    }
  }

  /** HEAD /containers/{id}/archive */
  async statPath (ref: string, clientPath: string): Promise<PathStat> {
    const { root, path } = await this.openReadRoot(ref, clientPath)
    try {
      const { loc, st, big, abs } = await this.locatePath(root, ref, path)
      await loc.dir.close()
      return await this.pathStat(root, abs, st, big)
    } finally { await root.close() }
  }

  /**
   * GET /containers/{id}/archive: the stat and a tar of the path. A directory's entries are renamed to start with
   * the requested base name (`/etc/` → `etc/…`, `/etc/.` → `./…`, `/` → `/…`), as dockerd's rebase does.
   */
  async archivePath (ref: string, clientPath: string): Promise<{ stat: PathStat, tar: Readable }> {
    const { c, root, path } = await this.openReadRoot(ref, clientPath)
    let located: Awaited<ReturnType<ContainerFiles['locatePath']>>
    let stat: PathStat
    try {
      located = await this.locatePath(root, ref, path)
      stat = await this.pathStat(root, located.abs, located.st, located.big)
    } catch (err) {
      await root.close()
      throw err
    }
    const { loc, st, abs } = located
    const base = goBase(abs)
    const tar = tarStreamOf(async (pack) => {
      const links: LinkTable = new Map()
      try {
        if (!st.isDirectory()) {
          await addFromDir(pack, loc.dir, loc.name, st, base, links)
          return
        }
        const dir = loc.name === '' ? loc.dir : await openDirAt(loc.dir, loc.name)
        try {
          await addEntry(pack, headerFor(base === '/' ? '/' : base, st))
          await addTree(pack, dir, base === '/' ? '/' : `${base}/`, links)
        } finally { if (dir !== loc.dir) await dir.close() }
      } finally {
        await loc.dir.close()
        await root.close()
      }
    })
    this.o.events.emit('container', 'archive-path', c.id, this.attributes(c))
    return { stat, tar }
  }

  /** PUT /containers/{id}/archive: extracts a tar (plain or gzip) into the directory `path` names. */
  async extractToDir (ref: string, path: string, body: Readable, opts: { noOverwriteDirNonDir: boolean, copyUIDGID: boolean }): Promise<void> {
    const { c, root } = await this.openRoot(ref)
    try {
      const abs = posix.join('/', path)
      let loc: Located
      try {
        loc = await root.locate(abs, { followLast: true })
      } catch (err) {
        const code = errnoOf(err)
        if (code === 'ENOENT' || code === 'ENOTDIR') throw notFound(`Could not find the file ${path} in container ${ref}`, { cause: err })
        if (code === 'ELOOP') throw invalidArgument(`${path}: too many levels of symbolic links`, { cause: err })
        throw err
      }
      let isDir: boolean
      try {
        isDir = loc.name === '' || (await lstat(at(loc.dir, loc.name))).isDirectory()
      } catch (err) {
        if (errnoOf(err) === 'ENOENT') throw notFound(`Could not find the file ${path} in container ${ref}`, { cause: err })
        throw err
      } finally { await loc.dir.close() }
      if (!isDir) throw invalidArgument('extraction point is not a directory')
      if (c.rec.hostConfig.ReadonlyRootfs === true) throw invalidArgument('container rootfs is marked read-only')
      const owner = opts.copyUIDGID ? await this.containerUser(root, c.rec.config.User) : undefined
      await extractInto(await decompressed(body), { root, dest: loc.path, noOverwriteDirNonDir: opts.noOverwriteDirNonDir, ...(owner !== undefined ? { owner } : {}) })
    } finally { await root.close() }
    this.o.events.emit('container', 'extract-to-dir', c.id, this.attributes(c))
  }

  /** Reads a small file of the container (its /etc/passwd) without following links out of it. */
  private async readScoped (root: ScopedRoot, path: string): Promise<string> {
    try {
      const loc = await root.locate(path, { followLast: true })
      try {
        const fh = await open(at(loc.dir, loc.name), fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK)
        try {
          if (!(await fh.stat()).isFile()) return ''
          return await fh.readFile('utf8')
        } finally { await fh.close() }
      } finally { await loc.dir.close() }
    } catch { return '' }
  }

  /**
   * Config.User as uid/gid for copyUIDGID, looked up in the container's own passwd and group files the way dockerd's
   * getUIDGID does; undefined (keep the archive's ownership) when the container has no user set.
   */
  private async containerUser (root: ScopedRoot, user: string): Promise<{ uid: number, gid: number } | undefined> {
    if (user === '') return undefined
    const table = (text: string): string[][] => text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).map((l) => l.split(':'))
    const colon = user.indexOf(':')
    const u = colon === -1 ? user : user.slice(0, colon)
    const g = colon === -1 ? '' : user.slice(colon + 1)
    let uid = 0
    let gid = 0
    if (u !== '') {
      const passwd = table(await this.readScoped(root, '/etc/passwd'))
      if (/^\d+$/.test(u)) {
        uid = Number(u)
        const entry = passwd.find((p) => p[2] === u)
        gid = entry !== undefined ? Number(entry[3]) : 0
      } else {
        const entry = passwd.find((p) => p[0] === u)
        if (entry === undefined) throw invalidArgument(`failed to look up user "${u}" in container: no matching entries in passwd file`)
        uid = Number(entry[2])
        gid = Number(entry[3])
      }
    }
    if (g !== '') {
      if (/^\d+$/.test(g)) gid = Number(g)
      else {
        const entry = table(await this.readScoped(root, '/etc/group')).find((x) => x[0] === g)
        if (entry === undefined) throw invalidArgument(`failed to look up group "${g}" in container: no matching entries in group file`)
        gid = Number(entry[2])
      }
    }
    return { uid, gid }
  }

  /** GET /containers/{id}/export: the whole root filesystem as a tar stream. */
  async export (ref: string): Promise<Readable> {
    const { c, root } = await this.openRoot(ref)
    const tar = tarStreamOf(async (pack) => {
      try {
        const dir = await root.openRoot()
        try { await addTree(pack, dir, '', new Map()) } finally { await dir.close() }
      } finally { await root.close() }
    })
    this.o.events.emit('container', 'export', c.id, this.attributes(c))
    return tar
  }

  /** GET /containers/{id}/changes */
  async changes (ref: string): Promise<Change[]> {
    const c = this.o.containers.get(ref)
    if (c.rec.rootfsKind !== 'overlay') throw notImplemented('changes are only tracked for containers on overlayfs; this one has a copied root filesystem')
    await this.o.containers.ensureRootfs(c)
    const image = await this.o.images.resolveImage(c.rec.imageId)
    return await containerChanges({ upper: c.rootfs.upper, lowers: await this.o.images.layerPaths(image), merged: c.rootfs.merged, mountPoints: runtimeMountPoints(c) })
  }

  /** GET /containers/{id}/top: the host's ps, filtered to the container's processes (as dockerd does). */
  async top (ref: string, psArgsRaw: string): Promise<TopResult> {
    const psArgs = psArgsRaw === '' ? '-ef' : psArgsRaw
    validatePsArgs(psArgs)
    const c = this.o.containers.get(ref)
    if (!isRunning(c.rec) || c.conn === null) throw conflict(`container ${c.id} is not running`)
    if (c.rec.state.status === 'restarting') throw conflict(`Container ${c.id} is restarting, wait until the container is running`)
    const pids = await this.o.runc.ps(c.id)
    const args = psArgs.split(' ')
    let output: string
    try {
      output = await run('ps', [...args, `-q${pids.join(',')}`])
    } catch {
      // some ps options (f, for one) cannot be combined with -q
      output = await run('ps', args)
    }
    return parsePsOutput(output, pids)
  }

  // ---- stats ------------------------------------------------------------------------------------------------------

  private async cpuSample (id: string): Promise<CpuSample> {
    const system = await systemCpuUsage()
    const online = os.cpus().length
    if (await this.cgroup2) {
      const dir = `/sys/fs/cgroup/berth/${id}`
      const st = keyValues(await readText(`${dir}/cpu.stat`))
      return {
        total: (st.usage_usec ?? 0) * 1000,
        percpu: [],
        kernel: (st.system_usec ?? 0) * 1000,
        user: (st.user_usec ?? 0) * 1000,
        system,
        online,
        throttling: { periods: st.nr_periods ?? 0, throttled_periods: st.nr_throttled ?? 0, throttled_time: (st.throttled_usec ?? 0) * 1000 }
      }
    }
    const acct = `/sys/fs/cgroup/cpuacct/berth/${id}`
    const ticks = keyValues(await readText(`${acct}/cpuacct.stat`))
    const percpu = (await readText(`${acct}/cpuacct.usage_percpu`) ?? '').trim().split(/\s+/).filter((v) => v !== '').map(Number)
    const thr = keyValues(await readText(`/sys/fs/cgroup/cpu/berth/${id}/cpu.stat`))
    return {
      total: num(await readText(`${acct}/cpuacct.usage`)),
      percpu,
      kernel: (ticks.system ?? 0) * (NS / CLOCK_TICKS),
      user: (ticks.user ?? 0) * (NS / CLOCK_TICKS),
      system,
      online,
      throttling: { periods: thr.nr_periods ?? 0, throttled_periods: thr.nr_throttled ?? 0, throttled_time: thr.throttled_time ?? 0 }
    }
  }

  private async memoryAndPids (id: string): Promise<{ memory: Record<string, unknown>, pids: Record<string, unknown> }> {
    const total = os.totalmem()
    if (await this.cgroup2) {
      const dir = `/sys/fs/cgroup/berth/${id}`
      const maxText = (await readText(`${dir}/memory.max`))?.trim()
      const limit = maxText === undefined || maxText === 'max' ? total : Math.min(Number(maxText), total)
      const pidsMax = (await readText(`${dir}/pids.max`))?.trim()
      return {
        memory: { usage: num(await readText(`${dir}/memory.current`)), stats: keyValues(await readText(`${dir}/memory.stat`)), limit },
        pids: { current: num(await readText(`${dir}/pids.current`)), ...(pidsMax !== undefined && pidsMax !== 'max' ? { limit: Number(pidsMax) } : {}) }
      }
    }
    const mem = `/sys/fs/cgroup/memory/berth/${id}`
    const limitRaw = num(await readText(`${mem}/memory.limit_in_bytes`))
    const pidsMax = (await readText(`/sys/fs/cgroup/pids/berth/${id}/pids.max`))?.trim()
    return {
      memory: {
        usage: num(await readText(`${mem}/memory.usage_in_bytes`)),
        max_usage: num(await readText(`${mem}/memory.max_usage_in_bytes`)),
        stats: keyValues(await readText(`${mem}/memory.stat`)),
        failcnt: num(await readText(`${mem}/memory.failcnt`)),
        limit: limitRaw === 0 || limitRaw > total ? total : limitRaw
      },
      pids: { current: num(await readText(`/sys/fs/cgroup/pids/berth/${id}/pids.current`)), ...(pidsMax !== undefined && pidsMax !== 'max' ? { limit: Number(pidsMax) } : {}) }
    }
  }

  private async statsObject (c: ContainerHandle, pre: { cpu: CpuSample, read: bigint } | null): Promise<{ json: Record<string, unknown>, cpu: CpuSample, read: bigint }> {
    const read = BigInt(Date.now()) * 1_000_000n
    const cpu = await this.cpuSample(c.id)
    const { memory, pids } = await this.memoryAndPids(c.id)
    const json = {
      read: rfc3339Nano(read),
      preread: pre === null ? ZERO_TIME : rfc3339Nano(pre.read),
      pids_stats: pids,
      blkio_stats: { io_service_bytes_recursive: null, io_serviced_recursive: null, io_queue_recursive: null, io_service_time_recursive: null, io_wait_time_recursive: null, io_merged_recursive: null, io_time_recursive: null, sectors_recursive: null },
      num_procs: 0,
      storage_stats: {},
      cpu_stats: cpuJson(cpu),
      precpu_stats: pre === null ? zeroCpu() : cpuJson(pre.cpu),
      memory_stats: memory,
      name: c.rec.name,
      id: c.id
    }
    return { json, cpu, read }
  }

  /**
   * GET /containers/{id}/stats: calls `write` with one stats object per second while the container runs (one
   * object when `stream` is false: two samples a second apart, so precpu_stats is filled, unless `oneShot`). A
   * container that does not run gets one object of zeros, as from dockerd.
   */
  async stats (ref: string, o: { stream: boolean, oneShot: boolean, signal: AbortSignal, write: (json: Record<string, unknown>) => Promise<void> }): Promise<void> {
    const c = this.o.containers.get(ref)
    if (!isRunning(c.rec)) {
      await o.write({ read: ZERO_TIME, preread: ZERO_TIME, pids_stats: {}, blkio_stats: {}, num_procs: 0, storage_stats: {}, cpu_stats: zeroCpu(), precpu_stats: zeroCpu(), memory_stats: {}, name: c.rec.name, id: c.id })
      return
    }
    const exitSeq = c.exitSeq
    const stopped = (): boolean => o.signal.aborted || c.exitSeq !== exitSeq || c.removed
    let pre: { cpu: CpuSample, read: bigint } | null = null
    if (!o.stream && !o.oneShot) {
      const first = await this.statsObject(c, null)
      pre = { cpu: first.cpu, read: first.read }
      await tick(c, o.signal)
      if (o.signal.aborted) return
    }
    for (;;) {
      const s = await this.statsObject(c, pre)
      await o.write(s.json)
      if (!o.stream || stopped()) return
      pre = { cpu: s.cpu, read: s.read }
      await tick(c, o.signal)
      if (stopped()) return
    }
  }
}

/** Resolves after one second, or at once when the container stops or the client leaves. */
async function tick (c: ContainerHandle, signal: AbortSignal): Promise<void> {
  await new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer)
      c.off('exit', done); c.off('removed', done)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, 1000)
    timer.unref()
    c.on('exit', done); c.on('removed', done)
    signal.addEventListener('abort', done)
  })
}

/**
 * What the runtime creates in a container's root filesystem as mount points (dockerd's init layer holds the same):
 * the /etc files Berth bind-mounts, the kernel filesystems, and the targets of the container's bind mounts.
 */
export function runtimeMountPoints (c: ContainerHandle): string[] {
  const out = ['/.dockerenv', '/dev', '/dev/pts', '/dev/shm', '/etc/hostname', '/etc/hosts', '/etc/mtab', '/etc/resolv.conf', '/proc', '/sys']
  for (const m of c.rec.mounts ?? []) out.push(posix.normalize(m.destination))
  return out
}

export function toChangesWire (changes: Change[]): Array<{ Path: string, Kind: number }> | null {
  if (changes.length === 0) return null
  return changes.map((ch) => ({ Path: ch.path, Kind: ch.kind === 'modify' ? 0 : ch.kind === 'add' ? 1 : 2 }))
}
