// dockerd's pidfile rule, with Linux's view of "alive": a file naming a running berth daemon stops the start; one
// naming nothing, a dead process, an unreaped zombie, or a process that is not a berth daemon (the pid was reused
// after a crash) is stale and replaced.
import { readFileSync } from 'node:fs'
import { basename } from 'node:path'

/** Whether a command line (argv) is a berth daemon's: `daemon` after a berth entry point (…/cli/main.js, berth…). */
export function isBerthDaemon (argv: readonly string[], ownEntry: string | undefined): boolean {
  const d = argv.indexOf('daemon')
  if (d < 1) return false
  return argv.slice(0, d).some((a) => a === ownEntry || basename(a).startsWith('berth') || a.endsWith('/cli/main.js'))
}

/**
 * A small file's text, null when it cannot be read. Synchronous: read at a start before anything is served (as
 * promises, each read was four trips through libuv's thread pool on a restart's way to /_ping).
 */
function readText (path: string): string | null {
  try { return readFileSync(path, 'utf8') } catch { return null }
}

/** The pid the file names when that process is a live berth daemon other than us, else null. */
export async function livePidInFile (path: string, ownEntry = process.argv[1]): Promise<number | null> {
  const pid = Number.parseInt((readText(path) ?? '').trim(), 10)
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return null
  const stat = readText(`/proc/${pid}/stat`)
  if (stat === null) return null
  // the state follows the command name, which is in parentheses and may itself hold ") "
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
  if (state === 'Z' || state === 'X') return null
  const cmdline = readText(`/proc/${pid}/cmdline`) ?? ''
  return isBerthDaemon(cmdline.split('\0'), ownEntry) ? pid : null
}
