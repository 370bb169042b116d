// Platforms (`os/arch[/variant]`): the host's, parsing and printing the strings clients send, and whether an image
// built for one platform runs on another. Pure (reads only process.arch and process.config).
import { invalidArgument } from '../errors.js'

export interface Platform {
  os: string
  architecture: string
  variant?: string
  'os.version'?: string
  'os.features'?: string[]
  features?: string[]
}

const ARCH_ALIASES: Record<string, string> = {
  x86_64: 'amd64', 'x86-64': 'amd64', aarch64: 'arm64', i386: '386', i686: '386', armhf: 'arm', armel: 'arm'
}

/** An architecture name in Go's spelling (`x86_64` → `amd64`). */
export function normalizeArch (arch: string): string {
  return ARCH_ALIASES[arch] ?? arch
}

/** The host's architecture in Go's spelling (what image configs carry). */
export function hostArch (): string {
  switch (process.arch) {
    case 'x64': return 'amd64'
    case 'ia32': return '386'
    case 'arm': return 'arm'
    default: return process.arch
  }
}

/** The platform this engine runs containers for. */
export function hostPlatform (): Platform {
  const architecture = hostArch()
  const p: Platform = { os: 'linux', architecture }
  if (architecture === 'arm') {
    const v = (process.config.variables as unknown as Record<string, unknown>).arm_version
    p.variant = `v${typeof v === 'string' || typeof v === 'number' ? v : '7'}`
  }
  return p
}

/** `os[/arch[/variant]]` or `arch` as clients send it (containerd's platforms.Parse, simplified). */
export function parsePlatform (spec: string): Platform {
  const parts = spec.trim().toLowerCase().split('/')
  if (parts.some((p) => p === '' || !/^[a-z0-9._-]+$/.test(p)) || parts.length > 3) {
    throw invalidArgument(`"${spec}": unknown operating system or architecture: invalid argument`)
  }
  const host = hostPlatform()
  const normArch = (a: string, variant?: string): { architecture: string, variant?: string } => {
    const arch = normalizeArch(a)
    let v = variant
    if (a === 'armhf') v ??= 'v7'
    if (a === 'armel') v ??= 'v6'
    if (arch === 'arm64' && v === 'v8') v = undefined
    return v === undefined ? { architecture: arch } : { architecture: arch, variant: v }
  }
  if (parts.length === 1) {
    const one = parts[0] as string
    if (['linux', 'windows', 'darwin', 'freebsd'].includes(one)) return { os: one, architecture: host.architecture, ...(host.variant !== undefined ? { variant: host.variant } : {}) }
    return { os: host.os, ...normArch(one) }
  }
  return { os: parts[0] as string, ...normArch(parts[1] as string, parts[2]) }
}

export function formatPlatform (p: Platform): string {
  return [p.os, p.architecture, p.variant].filter((x) => x !== undefined && x !== '').join('/')
}

/**
 * How well an image for `have` fits `wanted`: 0 exact, higher is a looser fit (an older arm variant), -1 when it
 * does not run there at all.
 */
export function platformRank (wanted: Platform, have: Platform): number {
  const arch = normalizeArch(have.architecture)
  if (have.os !== wanted.os || arch !== wanted.architecture) return -1
  const hv = arch === 'arm64' && have.variant === 'v8' ? undefined : have.variant
  if (wanted.variant === hv) return 0
  if (wanted.variant === undefined) return 1
  // arm: an older variant still runs on a newer CPU (v7 runs v6, v5)
  if (wanted.architecture === 'arm' && hv !== undefined && /^v\d$/.test(hv) && /^v\d$/.test(wanted.variant)) {
    const diff = Number(wanted.variant.slice(1)) - Number(hv.slice(1))
    if (diff > 0) return 1 + diff
  }
  return -1
}

/** An image config's platform; an empty OS or architecture is the host's (dockerd's OperatingSystem, BaseImgArch). */
export function imagePlatform (config: { os?: string, architecture?: string, variant?: string }): Platform {
  const os = config.os ?? ''
  const arch = config.architecture ?? ''
  const p: Platform = { os: os === '' ? 'linux' : os, architecture: arch === '' ? hostArch() : normalizeArch(arch) }
  if (config.variant !== undefined && config.variant !== '') p.variant = config.variant
  return p
}

/** True when an image config's platform fits the wanted one (used for single-manifest pulls with `platform=`). */
export function configMatches (config: { os?: string, architecture?: string, variant?: string }, wanted: Platform): boolean {
  return platformRank(wanted, { os: config.os ?? 'linux', architecture: config.architecture ?? '', ...(config.variant !== undefined ? { variant: config.variant } : {}) }) >= 0
}
