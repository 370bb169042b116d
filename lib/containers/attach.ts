// One attach session: live output from the container's log (from now, or from the start with logs=1) to the client,
// the client's input to the container's stdin. Output ends after the run that was current or next at attach time
// is over, or when the client types the detach keys (TTY containers, as dockerd); the client's half-close only
// means stdin EOF (and closes the container's stdin only with StdinOnce and no TTY, as dockerd).
import { stat } from 'node:fs/promises'
import type { Duplex, Readable } from 'node:stream'
import type { ContainerHandle } from './container-handle.js'
import { streamLog } from './log-reader.js'
import { DetachDetector } from '../stream/detach-keys.js'
import { logger } from '../log.js'

const log = logger('engine:attach')

export interface AttachOptions {
  out: Duplex
  input: Readable | null
  stdout: boolean
  stderr: boolean
  stdin: boolean
  logs: boolean
  stream: boolean
  signal: AbortSignal
  /** Bytes at the start of the input that are a request body, not stdin (dockerode's attach options). */
  skipInput?: number
  /** The detach keys (TTY containers; empty: dockerd's default ctrl-p ctrl-q). */
  detachKeys: Buffer
  /** The client typed the detach keys (the session ends; the container keeps running). */
  onDetach?: () => void
}

/**
 * Forwards client input to the container's stdin with backpressure; honours StdinOnce on client EOF (not with a
 * TTY: dockerd never closes a terminal's input for a client that goes). With a detector, the detach keys end the
 * forwarding and call onDetach.
 */
export function pumpStdin (c: ContainerHandle, input: Readable, signal: AbortSignal, skip = 0, detach?: { detector: DetachDetector, onDetach: () => void }): void {
  let toSkip = skip
  const onData = (chunk: Buffer): void => {
    let d = chunk
    if (toSkip > 0) {
      const n = Math.min(toSkip, d.length)
      toSkip -= n
      d = d.subarray(n)
      if (d.length === 0) return
    }
    let detached = false
    if (detach !== undefined) ({ data: d, detached } = detach.detector.push(d))
    if (d.length > 0 && !c.writeStdin(d) && !detached) {
      input.pause()
      c.once('stdin-drain', () => { input.resume() })
    }
    if (detached) { cleanup(); detach?.onDetach() }
  }
  const onEnd = (): void => {
    cleanup()
    if (c.rec.config.stdinOnce && !c.rec.config.tty) c.closeStdin()
  }
  const cleanup = (): void => {
    input.off('data', onData); input.off('end', onEnd)
    signal.removeEventListener('abort', cleanup)
  }
  input.on('data', onData)
  input.on('end', onEnd)
  signal.addEventListener('abort', cleanup)
  // an input paused explicitly before (a request body read off the socket) does not resume on a 'data' listener
  input.resume()
}

export async function attachSession (c: ContainerHandle, o: AttachOptions): Promise<void> {
  const exitSeq = c.exitSeq
  const outputEnds = c.outputEndSeq
  const attachedDuringExit = c.applyingExit
  const tty = c.rec.config.tty
  const detached = new AbortController()
  const signal = AbortSignal.any([o.signal, detached.signal])
  const onDetach = (): void => { detached.abort(); o.onDetach?.() }
  // where this session's output starts: taken before its stdin goes in, so that what the process answers to it (the
  // bytes a client sent with its request) is this session's too
  let start = 0
  if (!o.logs) start = await stat(c.logPath).then((s) => s.size, () => 0)
  if (o.stdin && o.input !== null && c.rec.config.openStdin) {
    pumpStdin(c, o.input, o.signal, o.skipInput ?? 0, tty ? { detector: new DetachDetector(o.detachKeys), onDetach } : undefined)
  } else if (o.input !== null) o.input.resume()
  const common = { path: c.logPath, stdout: o.stdout, stderr: o.stderr, tty, timestamps: false, signal }
  try {
    if (o.logs && !o.stream) {
      await streamLog(o.out, { ...common, unit: 'lines', startOffset: 0, follow: false, done: () => true, waitMore: async () => {} })
    } else if (o.stream) {
      const reading = streamLog(o.out, {
        ...common,
        unit: 'pieces',
        startOffset: start,
        follow: true,
        done: () => c.exitSeq !== exitSeq || c.outputEndSeq !== outputEnds || c.removed,
        waitMore: c.followWaiter(signal)
      })
      // the run's exit waits for this session's last output (not one that came as that exit was being applied: it
      // ends once the exit is seen)
      if (!attachedDuringExit) c.followedBy(reading.catch(() => {}))
      await reading
    }
  } catch (err) {
    log('attach %s: %s', c.id, (err as Error).message)
  }
  if (!o.out.destroyed) o.out.end()
}
