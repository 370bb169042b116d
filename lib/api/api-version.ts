// API versions the engine serves and how they compare (numerically per component: 1.9 < 1.24 < 1.50).

export const API_VERSION = '1.50'
export const MIN_API_VERSION = '1.24'
/** The dockerd release whose API we speak; reported as Version so clients that gate on it behave. */
export const ENGINE_VERSION = '28.2.2'
export const SERVER_HEADER = `Docker/${ENGINE_VERSION} (linux)`

export function compareVersions (a: string, b: string): number {
  const pa = a.split('.')
  const pb = b.split('.')
  const n = Math.max(pa.length, pb.length)
  for (let i = 0; i < n; i++) {
    const x = Number.parseInt(pa[i] ?? '0', 10) || 0
    const y = Number.parseInt(pb[i] ?? '0', 10) || 0
    if (x !== y) return x < y ? -1 : 1
  }
  return 0
}

export function versionAtLeast (v: string, min: string): boolean {
  return compareVersions(v, min) >= 0
}
