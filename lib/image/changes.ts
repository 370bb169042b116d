// Dockerfile-style `changes` (import, commit): CMD, ENTRYPOINT, ENV, EXPOSE, LABEL, WORKDIR, USER, VOLUME,
// STOPSIGNAL, ONBUILD. Pure.
import { invalidArgument } from '../errors.js'
import type { ImageRunConfig } from './types.js'
import { parseJson } from '../util/json-depth.js'

function jsonOrShell (arg: string): string[] {
  const t = arg.trim()
  if (t.startsWith('[')) {
    try {
      const v = parseJson(t) as unknown
      if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v as string[]
    } catch { /* falls through to the shell form */ }
  }
  return ['/bin/sh', '-c', t]
}

function words (arg: string): string[] {
  const t = arg.trim()
  if (t.startsWith('[')) {
    try { return (parseJson(t) as unknown[]).map(String) } catch { /* shell form */ }
  }
  return t.split(/\s+/).filter((w) => w !== '')
}

/** Parses `k=v k2="v 2"` or the legacy `k v` form. */
function pairs (arg: string): Array<[string, string]> {
  const t = arg.trim()
  if (!/^[^\s=]+=/.test(t)) {
    const i = t.search(/\s/)
    if (i === -1) throw invalidArgument(`invalid change: ${arg}`)
    return [[t.slice(0, i), t.slice(i).trim()]]
  }
  const out: Array<[string, string]> = []
  const re = /([^\s=]+)=("(?:[^"\\]|\\.)*"|'[^']*'|\S*)/g
  let m: RegExpExecArray | null
  while ((m = re.exec(t)) !== null) {
    let v = m[2] as string
    if (v.startsWith('"')) v = v.slice(1, -1).replace(/\\(.)/g, '$1')
    else if (v.startsWith("'")) v = v.slice(1, -1)
    out.push([m[1] as string, v])
  }
  return out
}

export function applyChanges (base: ImageRunConfig, changes: string[]): ImageRunConfig {
  const c: ImageRunConfig = { ...base }
  for (const raw of changes.flatMap((x) => x.split('\n'))) {
    const line = raw.trim()
    if (line === '') continue
    const sp = line.search(/\s/)
    const cmd = (sp === -1 ? line : line.slice(0, sp)).toUpperCase()
    const arg = sp === -1 ? '' : line.slice(sp + 1)
    switch (cmd) {
      case 'CMD': c.Cmd = jsonOrShell(arg); break
      case 'ENTRYPOINT': c.Entrypoint = jsonOrShell(arg); break
      case 'ENV': {
        const env = [...(c.Env ?? [])]
        for (const [k, v] of pairs(arg)) {
          const i = env.findIndex((e) => e.split('=')[0] === k)
          if (i === -1) env.push(`${k}=${v}`); else env[i] = `${k}=${v}`
        }
        c.Env = env
        break
      }
      case 'LABEL': {
        const labels = { ...(c.Labels ?? {}) }
        for (const [k, v] of pairs(arg)) labels[k] = v
        c.Labels = labels
        break
      }
      case 'EXPOSE': {
        const ports = { ...(c.ExposedPorts ?? {}) }
        for (const p of words(arg)) ports[p.includes('/') ? p : `${p}/tcp`] = {}
        c.ExposedPorts = ports
        break
      }
      case 'VOLUME': {
        const vols = { ...(c.Volumes ?? {}) }
        for (const v of words(arg)) vols[v] = {}
        c.Volumes = vols
        break
      }
      case 'WORKDIR': c.WorkingDir = arg.trim(); break
      case 'USER': c.User = arg.trim(); break
      case 'STOPSIGNAL': c.StopSignal = arg.trim(); break
      case 'ONBUILD': c.OnBuild = [...(c.OnBuild ?? []), arg.trim()]; break
      default: throw invalidArgument(`${cmd} is not a valid change command`)
    }
  }
  return c
}
