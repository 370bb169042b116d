// The environment a legacy link (--link on the default bridge) gives the linking container, as dockerd's
// daemon/links: <ALIAS>_PORT…, <ALIAS>_NAME, <ALIAS>_ENV_… . Pure.

export interface LinkEnvInput {
  /** The link's name, `/parent/alias`. */
  name: string
  /** The linked container's address on the default bridge. */
  ip: string
  /** The linked container's environment (its Config.Env). */
  env: string[]
  /** The linked container's exposed ports, `80/tcp`. */
  exposed: string[]
}

interface Port { num: number, proto: string }

function parsePort (key: string): Port | null {
  const [n = '', proto = 'tcp'] = key.split('/')
  const num = Number(n)
  return Number.isInteger(num) && num > 0 && num < 65536 ? { num, proto: proto.toLowerCase() } : null
}

/** TCP first, then by number, then by protocol (dockerd's withTCPPriority). */
function comparePorts (a: Port, b: Port): number {
  if (a.proto !== b.proto) {
    if (a.proto === 'tcp') return -1
    if (b.proto === 'tcp') return 1
  }
  if (a.proto === b.proto) return a.num - b.num
  return a.proto < b.proto ? -1 : 1
}

export function linkEnv (l: LinkEnvInput): string[] {
  const alias = (l.name.split('/').pop() ?? '').toUpperCase().replace(/-/g, '_')
  const ports = l.exposed.map(parsePort).filter((p): p is Port => p !== null).sort(comparePorts)
  const env: string[] = []
  let start: Port | undefined
  let end: Port | undefined
  ports.forEach((p, i) => {
    if (i === 0) {
      start = p
      end = p
      env.push(`${alias}_PORT=${p.proto}://${l.ip}:${p.num}`)
    }
    const prefix = `${alias}_PORT_${p.num}_${p.proto.toUpperCase()}`
    env.push(`${prefix}=${p.proto}://${l.ip}:${p.num}`, `${prefix}_ADDR=${l.ip}`, `${prefix}_PORT=${p.num}`, `${prefix}_PROTO=${p.proto}`)
    const s = start as Port
    const e = end as Port
    // consecutive ports of one protocol are also described as a range
    if (p.num === e.num + 1 && p.proto === e.proto) {
      end = p
      if (i < ports.length - 1) return
    }
    if ((end as Port).num !== s.num || (end as Port).proto !== s.proto) {
      const r = `${alias}_PORT_${s.num}_${s.proto.toUpperCase()}`
      const last = end as Port
      env.push(`${r}_START=${s.proto}://${l.ip}:${s.num}`, `${r}_PORT_START=${s.num}`, `${r}_END=${last.proto}://${l.ip}:${last.num}`, `${r}_PORT_END=${last.num}`)
    }
    start = p
    end = p
  })
  env.push(`${alias}_NAME=${l.name}`)
  for (const v of l.env) {
    const k = v.indexOf('=')
    if (k === -1) continue
    const key = v.slice(0, k)
    // set by image builds, not the linked service's
    if (key === 'HOME' || key === 'PATH') continue
    env.push(`${alias}_ENV_${key}=${v.slice(k + 1)}`)
  }
  return env
}
