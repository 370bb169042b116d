// A container's start that failed in the runtime (its bundle could not be written, or the OCI runtime refused it),
// with the exit code the container records for it, as dockerd decides it from the runtime's words: 127 for a
// command that is not found, 126 for one that cannot be run, 128 for anything else.
import { EngineError, isEngineError, errorMessage, type ErrorKind } from '../errors.js'

export class StartError extends EngineError {
  /** The exit code a container whose start failed this way shows (State.ExitCode). */
  readonly exitCode: number
  constructor (kind: ErrorKind, message: string, exitCode: number, cause: unknown) {
    super(kind, message, { cause })
    this.exitCode = exitCode
  }
}

/** The exit code a start failure with this message means (dockerd's reading of the runtime's error text). */
export function startExitCode (message: string): number {
  if (/executable file not found|no such file or directory/.test(message)) return 127
  if (/permission denied|is a directory/.test(message)) return 126
  return 128
}

/** Any failure of a start in the runtime, as a StartError of the same kind and message. */
export function toStartError (err: unknown): StartError {
  if (err instanceof StartError) return err
  const message = errorMessage(err)
  return new StartError(isEngineError(err) ? err.kind : 'internal', message, startExitCode(message), err)
}
