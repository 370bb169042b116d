// dockerd's pidfile rule, with Linux's view of "alive": a file naming a running berth daemon stops the start; one
// naming nothing, a dead process, an unreaped zombie, or a process that is not a berth daemon (the pid was reused
// after a crash) is stale and replaced.
import { readFile } from 'node:fs/promises'
import { basename } from 'node:path'

/** Whether a command line (argv) is a berth daemon's: `daemon` after a berth entry point (…/cli/main.js, berth…). */
export function isBerthDaemon (argv: readonly string[], ownEntry: string | undefined): boolean {
  const d = argv.indexOf('daemon')
  if (d < 1) return false
  return argv.slice(0, d).some((a) => a === ownEntry || basename(a).startsWith('berth') || a.endsWith('/cli/main.js'))
}

/** The pid the file names when that process is a live berth daemon other than us, else null. */
export async function livePidInFile (path: string, ownEntry = process.argv[1]): Promise<number | null> {
  const pid = Number.parseInt((await readFile(path, 'utf8').catch(() => '')).trim(), 10)
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return null
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null)
  if (stat === null) return null
  // the state follows the command name, which is in parentheses and may itself hold ") "
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
  if (state === 'Z' || state === 'X') return null
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')
  return isBerthDaemon(cmdline.split('\0'), ownEntry) ? pid : null
}
