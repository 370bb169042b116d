// The one mount parser: -v/Binds strings, HostConfig.Mounts objects, --volumes-from and Config.Volumes become typed
// Mount records, checked and ordered as dockerd's registerMountPoints does (pure: no filesystem, no volume store).
import { posix } from 'node:path'
import { invalidArgument } from '../errors.js'

export type MountType = 'bind' | 'volume' | 'tmpfs'

/** One mount of a container, as create resolves it and the container record keeps it. */
export interface Mount {
  type: MountType
  /** bind: the host path; volume: the volume's name ('' for an anonymous volume not created yet); tmpfs: ''. */
  source: string
  destination: string
  rw: boolean
  /** The mode text inspect shows ('z' for volumes given by -v or --mount without one, as dockerd). */
  mode: string
  /** bind only: rprivate unless given. */
  propagation: string
  /** volume only: do not fill a new volume from the image. */
  nocopy: boolean
  /** bind only: a missing source is created (-v) rather than refused (--mount). */
  createSource: boolean
  /** bind only: mounts below the source are not carried along (--mount bind-nonrecursive). */
  nonRecursive?: boolean
  /** volume only: the driver ('local') and what a volume created for this mount gets. */
  driver: string
  volumeLabels?: Record<string, string>
  volumeOptions?: Record<string, string>
  /** tmpfs only. */
  tmpfsSize?: number
  tmpfsMode?: number
  /** volume only: created without a name (removed by `rm -v`). */
  anonymous: boolean
  /** volume only: where its data is on the host (set when the volume is created or found). */
  path?: string
  /** volume only: the subdirectory (or file) of the volume that is mounted (VolumeOptions.Subpath). */
  subpath?: string
}

const RW_MODES = new Set(['rw', 'ro'])
const LABEL_MODES = new Set(['z', 'Z'])
const PROPAGATIONS = new Set(['shared', 'rshared', 'slave', 'rslave', 'private', 'rprivate'])
const CONSISTENCY = new Set(['consistent', 'cached', 'delegated'])

interface ParsedMode { rw: boolean, propagation: string, nocopy: boolean }

/** dockerd's ValidMountMode and its readers; null for an invalid mode. */
export function parseMode (mode: string): ParsedMode | null {
  const out: ParsedMode = { rw: true, propagation: '', nocopy: false }
  if (mode === '') return out
  let rw = 0
  let label = 0
  let prop = 0
  let copy = 0
  let cons = 0
  for (const o of mode.split(',')) {
    if (RW_MODES.has(o)) { rw++; out.rw = o === 'rw' } else if (LABEL_MODES.has(o)) label++
    else if (PROPAGATIONS.has(o)) { prop++; out.propagation = o } else if (o === 'nocopy' || o === 'copy') { copy++; out.nocopy = o === 'nocopy' } else if (CONSISTENCY.has(o)) cons++
    else return null
  }
  if (rw > 1 || label > 1 || prop > 1 || copy > 1 || cons > 1) return null
  return out
}

/** Go's filepath.IsLocal, as dockerd checks a Subpath: relative, not empty, never above its base lexically. */
export function isLocalSubpath (subpath: string): boolean {
  if (subpath === '' || subpath.startsWith('/')) return false
  const clean = posix.normalize(subpath)
  return clean !== '..' && !clean.startsWith('../')
}

function mountConfigError (type: string, what: string): Error {
  return invalidArgument(`invalid mount config for type "${type}": ${what}`)
}

function checkDestination (type: string, dst: string): string {
  if (!posix.isAbsolute(dst)) throw mountConfigError(type, `invalid mount path: '${dst}' mount path must be absolute`)
  const clean = posix.normalize(dst)
  if (clean === '/') throw mountConfigError(type, "invalid specification: destination can't be '/'")
  return clean.length > 1 && clean.endsWith('/') ? clean.slice(0, -1) : clean
}

/** One `-v`/Binds entry: `[src:]dst[:mode]` (src absolute: a bind; a name: a named volume; none: anonymous). */
export function parseBind (spec: string, volumeDriver = ''): Mount {
  const invalid = (): Error => invalidArgument(`invalid volume specification: '${spec}'`)
  const arr = spec.split(':')
  let src = ''
  let dst = ''
  let mode = ''
  switch (arr.length) {
    case 1: dst = arr[0] as string; break
    case 2:
      if (parseMode(arr[1] as string) !== null && !(arr[1] as string).startsWith('/')) throw invalid()
      src = arr[0] as string; dst = arr[1] as string; break
    case 3: src = arr[0] as string; dst = arr[1] as string; mode = arr[2] as string; break
    default: throw invalid()
  }
  if (dst === '' && src === '') throw invalid()
  const m = parseMode(mode)
  if (m === null) throw invalidArgument(`invalid mode: ${mode}`)
  const type: MountType = src === '' ? 'volume' : posix.isAbsolute(src) ? 'bind' : 'volume'
  let destination: string
  try { destination = checkDestination(type, dst) } catch (err) { throw invalidArgument(`invalid volume specification: '${spec}': ${(err as Error).message}`) }
  if (type === 'bind') {
    if (m.nocopy) throw invalidArgument(`invalid volume specification: '${spec}': invalid mount config for type "bind": field VolumeOptions must not be specified`)
    return { type, source: posix.normalize(src), destination, rw: m.rw, mode, propagation: m.propagation === '' ? 'rprivate' : m.propagation, nocopy: false, createSource: true, driver: '', anonymous: false }
  }
  if (m.propagation !== '') throw invalidArgument(`invalid mode: ${mode}`)
  return { type, source: src, destination, rw: m.rw, mode: src === '' ? mode : (mode === '' ? 'z' : mode), propagation: '', nocopy: m.nocopy, createSource: false, driver: volumeDriver === '' ? 'local' : volumeDriver, anonymous: src === '' }
}

function obj (v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? v as Record<string, unknown> : undefined
}

function strRecord (v: unknown): Record<string, string> | undefined {
  const o = obj(v)
  if (o === undefined) return undefined
  const out: Record<string, string> = {}
  for (const [k, x] of Object.entries(o)) out[k] = String(x)
  return Object.keys(out).length === 0 ? undefined : out
}

/** One HostConfig.Mounts entry (what `--mount` sends). */
export function parseApiMount (raw: unknown): Mount {
  const m = obj(raw)
  if (m === undefined) throw invalidArgument('invalid mount config: expected an object')
  const type = typeof m.Type === 'string' ? m.Type : ''
  const source = typeof m.Source === 'string' ? m.Source : ''
  const target = typeof m.Target === 'string' ? m.Target : ''
  const bindOpts = obj(m.BindOptions)
  const volOpts = obj(m.VolumeOptions)
  const tmpfsOpts = obj(m.TmpfsOptions)
  const rw = m.ReadOnly !== true
  if (type !== 'bind' && type !== 'volume' && type !== 'tmpfs') throw mountConfigError(type, 'mount type unknown')
  const must = (cond: boolean, field: string, what = 'must not be specified'): void => { if (cond) throw mountConfigError(type, `field ${field} ${what}`) }
  if (type === 'bind') {
    must(source === '', 'Source', 'must not be empty')
    must(volOpts !== undefined, 'VolumeOptions')
    must(tmpfsOpts !== undefined, 'TmpfsOptions')
    if (!posix.isAbsolute(source)) throw mountConfigError(type, `invalid mount path: '${source}' mount path must be absolute`)
    const destination = checkDestination(type, target)
    const prop = typeof bindOpts?.Propagation === 'string' && bindOpts.Propagation !== '' ? bindOpts.Propagation : 'rprivate'
    if (!PROPAGATIONS.has(prop)) throw mountConfigError(type, `invalid propagation mode: ${prop}`)
    if (bindOpts?.ReadOnlyForceRecursive === true) throw mountConfigError(type, 'field BindOptions.ReadOnlyForceRecursive is not supported by this engine')
    const out: Mount = { type, source: posix.normalize(source), destination, rw, mode: '', propagation: prop, nocopy: false, createSource: bindOpts?.CreateMountpoint === true, driver: '', anonymous: false }
    if (bindOpts?.NonRecursive === true) out.nonRecursive = true
    return out
  }
  if (type === 'volume') {
    must(bindOpts !== undefined, 'BindOptions')
    must(tmpfsOpts !== undefined, 'TmpfsOptions')
    const destination = checkDestination(type, target)
    const dc = obj(volOpts?.DriverConfig)
    const driver = typeof dc?.Name === 'string' && dc.Name !== '' ? dc.Name : 'local'
    const subpath = typeof volOpts?.Subpath === 'string' ? volOpts.Subpath : ''
    if (subpath !== '' && source === '') throw mountConfigError(type, 'must not set Subpath when using anonymous volumes')
    if (subpath !== '' && !isLocalSubpath(subpath)) throw mountConfigError(type, 'subpath must be a relative path within the volume')
    const out: Mount = { type, source, destination, rw, mode: 'z', propagation: '', nocopy: volOpts?.NoCopy === true, createSource: false, driver, anonymous: source === '' }
    if (subpath !== '') out.subpath = subpath
    const labels = strRecord(volOpts?.Labels)
    if (labels !== undefined) out.volumeLabels = labels
    const opts = strRecord(dc?.Options)
    if (opts !== undefined) out.volumeOptions = opts
    return out
  }
  must(source !== '', 'Source')
  must(bindOpts !== undefined, 'BindOptions')
  must(volOpts !== undefined, 'VolumeOptions')
  const destination = checkDestination(type, target)
  const out: Mount = { type, source: '', destination, rw, mode: '', propagation: '', nocopy: false, createSource: false, driver: '', anonymous: false }
  const size = tmpfsOpts?.SizeBytes
  if (size !== undefined && size !== null && size !== 0) {
    if (typeof size !== 'number' || !Number.isInteger(size) || size < 0) throw mountConfigError(type, `invalid tmpfs size: ${String(size)}`)
    out.tmpfsSize = size
  }
  const mode = tmpfsOpts?.Mode
  if (mode !== undefined && mode !== null && mode !== 0) {
    if (typeof mode !== 'number' || !Number.isInteger(mode) || mode < 0 || mode > 0o7777) throw mountConfigError(type, `invalid tmpfs mode: ${String(mode)}`)
    out.tmpfsMode = mode
  }
  return out
}

/** One HostConfig.VolumesFrom entry: `container[:ro|rw]`. */
export function parseVolumesFrom (spec: string): { container: string, mode: '' | 'ro' | 'rw' } {
  const i = spec.indexOf(':')
  if (i === -1) return { container: spec, mode: '' }
  const mode = spec.slice(i + 1)
  if (mode !== 'ro' && mode !== 'rw') throw invalidArgument(`invalid mode: ${mode}`)
  return { container: spec.slice(0, i), mode }
}

export interface MountInputs {
  binds: readonly string[]
  mounts: readonly unknown[]
  /** The mounts of the --volumes-from containers, already looked up, with the mode each was named with. */
  volumesFrom: ReadonlyArray<{ mounts: readonly Mount[], mode: '' | 'ro' | 'rw' }>
  /** Config.Volumes (the image's VOLUMEs merged with the request's): anonymous volumes where nothing else mounts. */
  volumes: readonly string[]
  volumeDriver?: string
  /** HostConfig.Tmpfs's paths, as given (--tmpfs): a -v on one of them is refused, an anonymous volume left out. */
  tmpfs?: readonly string[]
}

/**
 * The container's mounts in dockerd's order of precedence: --volumes-from first, then Binds and Mounts (which replace
 * a --volumes-from mount on the same path, and may not repeat a path between them), then Config.Volumes where the
 * path is still free. Sorted by destination depth so parents mount before children.
 */
export function resolveMounts (inp: MountInputs): Mount[] {
  const byDest = new Map<string, Mount>()
  for (const vf of inp.volumesFrom) {
    for (const m of vf.mounts) {
      const copy: Mount = { ...m }
      if (vf.mode !== '') {
        copy.rw = vf.mode === 'rw'
        if (copy.type === 'volume' || copy.type === 'bind') copy.mode = vf.mode
      }
      byDest.set(copy.destination, copy)
    }
  }
  const explicit = new Set<string>()
  const add = (m: Mount): void => {
    if (explicit.has(m.destination)) throw invalidArgument(`Duplicate mount point: ${m.destination}`)
    explicit.add(m.destination)
    byDest.set(m.destination, m)
  }
  // dockerd compares --tmpfs paths as given with the cleaned destinations: `--tmpfs /a/ -v x:/a` is no clash
  const tmpfs = new Set(inp.tmpfs ?? [])
  for (const b of inp.binds) {
    const m = parseBind(b, inp.volumeDriver)
    if (tmpfs.has(m.destination)) throw invalidArgument(`Duplicate mount point: ${m.destination}`)
    add(m)
  }
  for (const m of inp.mounts) add(parseApiMount(m))
  for (const v of inp.volumes) {
    let dst: string
    try { dst = checkDestination('volume', v) } catch (err) { throw invalidArgument(`invalid volume specification: '${v}': ${(err as Error).message}`) }
    if (byDest.has(dst) || tmpfs.has(dst)) continue
    byDest.set(dst, { type: 'volume', source: '', destination: dst, rw: true, mode: '', propagation: '', nocopy: false, createSource: false, driver: inp.volumeDriver === undefined || inp.volumeDriver === '' ? 'local' : inp.volumeDriver, anonymous: true })
  }
  return [...byDest.values()].sort((a, b) => depth(a.destination) - depth(b.destination))
}

function depth (p: string): number { return p.split('/').length }

/**
 * The bind and volume mounts a tmpfs covers: dockerd mounts a --tmpfs (or --mount type=tmpfs) path's tmpfs and leaves
 * out a --mount bind or volume on that same path (it stays in inspect's Mounts, and its volume is created).
 */
export function coveredByTmpfs (mounts: readonly Mount[], tmpfs: readonly string[]): Set<string> {
  const dests = new Set(tmpfs)
  for (const m of mounts) if (m.type === 'tmpfs') dests.add(m.destination)
  const out = new Set<string>()
  for (const m of mounts) if (m.type !== 'tmpfs' && dests.has(m.destination)) out.add(m.destination)
  return out
}

/** Mount destinations a container's root filesystem gets as mount points. */
export function mountDestinations (mounts: readonly Mount[]): string[] {
  return mounts.map((m) => m.destination)
}

/** A volume mount's Config.Volumes-style key list, for the `volume` container filter. */
export function mountMatches (m: Mount, value: string): boolean {
  return m.destination === value || (m.type === 'volume' && m.source === value) || (m.type === 'bind' && m.source === value)
}
