// The exec routes' wire shapes: POST /containers/{id}/exec's body decoded (keys case-insensitive, as Go decodes
// them) and GET /exec/{id}/json encoded.
import { invalidArgument } from '../../errors.js'
import { canonicalKeys, strSlice } from '../../containers/create-config.js'
import type { ExecConfig, ExecInstance } from '../../containers/exec-service.js'
import { parseDetachKeys } from '../../stream/detach-keys.js'

const EXEC_KEYS = ['User', 'Privileged', 'Tty', 'ConsoleSize', 'AttachStdin', 'AttachStderr', 'AttachStdout', 'DetachKeys', 'Env', 'WorkingDir', 'Cmd'] as const

export function decodeExecConfig (body: Record<string, unknown>): ExecConfig {
  const b = canonicalKeys(body, EXEC_KEYS)
  const cmd = strSlice(b.Cmd, 'Cmd') ?? []
  if (cmd.length === 0) throw invalidArgument('No exec command specified')
  const keys = typeof b.DetachKeys === 'string' ? b.DetachKeys : ''
  const detachKeys = keys === '' ? Buffer.alloc(0) : parseDetachKeys(keys)
  // dockerd answers a 500 for these; a client's bad input is a 400 here
  if (detachKeys === null) throw invalidArgument(`Invalid escape keys (${keys}) provided`)
  const cs = b.ConsoleSize
  return {
    cmd,
    env: Array.isArray(b.Env) ? (b.Env as unknown[]).map(String) : [],
    user: typeof b.User === 'string' ? b.User : '',
    workingDir: typeof b.WorkingDir === 'string' ? b.WorkingDir : '',
    tty: b.Tty === true,
    attachStdin: b.AttachStdin === true,
    attachStdout: b.AttachStdout === true,
    attachStderr: b.AttachStderr === true,
    privileged: b.Privileged === true,
    consoleSize: Array.isArray(cs) && cs.length === 2 ? [Number(cs[0]), Number(cs[1])] : null,
    detachKeys
  }
}

export function toExecInspect (e: ExecInstance): Record<string, unknown> {
  return {
    ID: e.id,
    Running: e.running,
    ExitCode: e.exitCode,
    ProcessConfig: { tty: e.config.tty, entrypoint: e.config.cmd[0], arguments: e.config.cmd.slice(1), privileged: e.config.privileged, ...(e.config.user !== '' ? { user: e.config.user } : {}) },
    OpenStdin: e.config.attachStdin,
    OpenStderr: e.config.attachStderr,
    OpenStdout: e.config.attachStdout,
    CanRemove: false,
    ContainerID: e.container.id,
    // dockerd's []byte field: base64 in JSON
    DetachKeys: e.config.detachKeys.toString('base64'),
    Pid: e.running ? e.pid : 0
  }
}
