// A container's logs as GET /containers/{id}/logs reads them: its log files (rotated ones first), the streams and the
// time range asked for, following the live file until the container stops or the client goes.
import type { Writable } from 'node:stream'
import type { ContainerHandle } from './container-handle.js'
import { isRunning } from './container.js'
import { logFiles, streamLog } from './log-reader.js'
import { hostname } from 'node:os'
import { detailsPrefix, logAttributes } from './log-attrs.js'

export interface LogsRequest {
  stdout: boolean
  stderr: boolean
  timestamps: boolean
  follow: boolean
  sinceNs?: bigint
  untilNs?: bigint
  /** Only the last N lines; undefined for all. */
  tail?: number
  /** Each line after its log attributes (`docker logs --details`). */
  details?: boolean
}

/** The attributes `details` prints before each line of a container's log (log-attrs.ts). */
export function containerDetailsPrefix (c: ContainerHandle): Buffer {
  const r = c.rec
  return detailsPrefix(logAttributes(r.log.options, r.config.labels, r.config.env, {
    id: r.id, name: r.name, imageId: r.imageId, imageName: r.config.image, path: r.path, args: r.args, hostname: hostname()
  }))
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
    ...(r.details === true ? { prefix: containerDetailsPrefix(c) } : {}),
    ...(r.sinceNs !== undefined ? { sinceNs: r.sinceNs } : {}),
    ...(r.untilNs !== undefined ? { untilNs: r.untilNs } : {}),
    ...(r.tail !== undefined ? { tail: r.tail } : {}),
    follow: r.follow,
    done: () => !isRunning(c.rec) || c.removed,
    waitMore: c.followWaiter(signal),
    signal
  })
}
