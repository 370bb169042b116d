// A container's logs as GET /containers/{id}/logs reads them: its log files (rotated ones first), the streams and the
// time range asked for, following the live file until the container stops or the client goes.
import type { Writable } from 'node:stream'
import type { ContainerHandle } from './container-handle.js'
import { isRunning } from './container.js'
import { logFiles, streamLog } from './log-reader.js'

export interface LogsRequest {
  stdout: boolean
  stderr: boolean
  timestamps: boolean
  follow: boolean
  sinceNs?: bigint
  untilNs?: bigint
  /** Only the last N lines; undefined for all. */
  tail?: number
}

/** Writes the container's log to `out` (frames unless the container has a TTY); resolves when done or `signal` fires. */
export async function streamContainerLogs (c: ContainerHandle, r: LogsRequest, out: Writable, signal: AbortSignal): Promise<void> {
  await streamLog(out, {
    path: c.logPath,
    unit: 'lines',
    rotated: logFiles(c.logPath, c.rec.log.maxFiles).slice(0, -1),
    startOffset: 0,
    stdout: r.stdout,
    stderr: r.stderr,
    tty: c.rec.config.tty,
    timestamps: r.timestamps,
    ...(r.sinceNs !== undefined ? { sinceNs: r.sinceNs } : {}),
    ...(r.untilNs !== undefined ? { untilNs: r.untilNs } : {}),
    ...(r.tail !== undefined ? { tail: r.tail } : {}),
    follow: r.follow,
    done: () => !isRunning(c.rec) || c.removed,
    waitMore: c.followWaiter(signal),
    signal
  })
}
