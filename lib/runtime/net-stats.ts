// A container's network interface counters, read from /proc/<pid>/net/dev (the table of the namespace that process
// is in: the container's, without entering it), in the shape of the Engine API's stats `networks`.
import { readFile } from 'node:fs/promises'

export interface InterfaceStats {
  rx_bytes: number
  rx_packets: number
  rx_errors: number
  rx_dropped: number
  tx_bytes: number
  tx_packets: number
  tx_errors: number
  tx_dropped: number
}

/** The rows of a /proc/net/dev text, by interface name. Pure. */
export function parseNetDev (text: string): Map<string, InterfaceStats> {
  const out = new Map<string, InterfaceStats>()
  for (const line of text.split('\n').slice(2)) {
    const i = line.indexOf(':')
    if (i === -1) continue
    const f = line.slice(i + 1).trim().split(/\s+/).map(Number)
    if (f.length < 16 || f.some((x) => !Number.isFinite(x))) continue
    out.set(line.slice(0, i).trim(), {
      rx_bytes: f[0] as number,
      rx_packets: f[1] as number,
      rx_errors: f[2] as number,
      rx_dropped: f[3] as number,
      tx_bytes: f[8] as number,
      tx_packets: f[9] as number,
      tx_errors: f[10] as number,
      tx_dropped: f[11] as number
    })
  }
  return out
}

/** The counters of `names` in the namespace of process `pid` (those it has); null when the process is gone. */
export async function interfaceStats (pid: number, names: string[]): Promise<Record<string, InterfaceStats> | null> {
  if (pid <= 0) return null
  let text: string
  try { text = await readFile(`/proc/${pid}/net/dev`, 'utf8') } catch { return null }
  const all = parseNetDev(text)
  const out: Record<string, InterfaceStats> = {}
  for (const n of names) { const s = all.get(n); if (s !== undefined) out[n] = s }
  return out
}
