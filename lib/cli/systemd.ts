// The service manager's side of the daemon: sockets passed by systemd's socket activation (sd_listen_fds(3):
// LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES; the fds start at 3) and readiness notifications (sd_notify(3): a datagram
// to $NOTIFY_SOCKET). Node cannot send on a Unix datagram socket, so notifications go through the container monitor
// binary (`berth-shim notify`, lib/runtime/shim/service-modes.c): one short process at start and one at stop, never
// on a request's path.
import { execFile } from 'node:child_process'

export const SD_LISTEN_FDS_START = 3

/**
 * The sockets passed to this process, and the variables removed (as sd_listen_fds(1) does: children must not take
 * them for theirs). Empty when none were passed, or when they were meant for another process (LISTEN_PID).
 */
export function takeListenFds (env: NodeJS.ProcessEnv = process.env, pid = process.pid): Array<{ fd: number, name: string }> {
  const forUs = env.LISTEN_PID === String(pid)
  const count = Number.parseInt(env.LISTEN_FDS ?? '', 10)
  const names = (env.LISTEN_FDNAMES ?? '').split(':')
  delete env.LISTEN_PID
  delete env.LISTEN_FDS
  delete env.LISTEN_FDNAMES
  if (!forUs || !Number.isInteger(count) || count <= 0) return []
  return Array.from({ length: count }, (_v, i) => ({ fd: SD_LISTEN_FDS_START + i, name: names[i] ?? '' }))
}

/**
 * $NOTIFY_SOCKET, removed from the environment: the daemon's children (monitors, and the OCI runtime under them,
 * which forwards a container's own notifications to it) must not see it.
 */
export function takeNotifySocket (env: NodeJS.ProcessEnv = process.env): string | null {
  const s = env.NOTIFY_SOCKET
  delete env.NOTIFY_SOCKET
  return s === undefined || s === '' ? null : s
}

/**
 * Sends sd_notify states (READY=1, STOPPING=1, STATUS=…) to the socket; resolves once sent, or with the reason it
 * was not (the caller logs it: a notification never stops the daemon).
 */
export async function sdNotify (shim: string, socket: string, states: string[]): Promise<string | null> {
  return await new Promise((resolve) => {
    execFile(shim, ['notify', ...states], { env: { NOTIFY_SOCKET: socket }, timeout: 10_000 }, (err, _out, stderr) => {
      resolve(err === null ? null : (String(stderr).trim() !== '' ? String(stderr).trim() : err.message))
    })
  })
}
