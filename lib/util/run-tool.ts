// The coreutils and attr tools the stores run where Node has no call (mknod, mkfifo, setfattr): one runner that turns
// a tool's failure into an errno-like code, so the tools' own words ("Operation not permitted", "Permission denied")
// are read here and nowhere else.
import { execFile } from 'node:child_process'

/**
 * The failure of a tool, its message with the tool's stderr: `code` EPERM or EACCES when the tool says so, EIO for
 * anything else; `notInstalled` when the tool itself is missing.
 */
export interface ToolError extends Error { code: 'EPERM' | 'EACCES' | 'EIO', notInstalled: boolean }

export async function runTool (cmd: string, args: string[], timeoutMs: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    execFile(cmd, args, { timeout: timeoutMs }, (err, _stdout, stderr) => {
      if (err === null) { resolve(); return }
      const text = String(stderr).trim()
      const e = new Error(`${cmd}: ${text !== '' ? text : err.message}`, { cause: err }) as ToolError
      e.code = /operation not permitted/i.test(text) ? 'EPERM' : /permission denied/i.test(text) ? 'EACCES' : 'EIO'
      e.notInstalled = (err as NodeJS.ErrnoException).code === 'ENOENT'
      reject(e)
    })
  })
}
