// Running a host client tool (docker-compose, python3 with docker-py, ...) from a spec: its exit status and output,
// bounded in time, and the skip reasons for the client tools a spec needs.
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { dockerCli } from './engine.js'

export interface ToolResult {
  status: number
  stdout: string
  stderr: string
  /** stdout and stderr together, in the order they arrived */
  out: string
}

/** Runs cmd with stdin closed; a run still going after timeoutMs (default 120 s) is killed and reports status -1. */
export async function runTool (cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv, cwd?: string, timeoutMs?: number } = {}): Promise<ToolResult> {
  return await new Promise((resolve) => {
    const child = spawn(cmd, args, { env: opts.env ?? process.env, cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    const stdout: Buffer[] = []
    const stderr: Buffer[] = []
    const both: Buffer[] = []
    child.stdout.on('data', (d: Buffer) => { stdout.push(d); both.push(d) })
    child.stderr.on('data', (d: Buffer) => { stderr.push(d); both.push(d) })
    const timer = setTimeout(() => { child.kill('SIGKILL') }, opts.timeoutMs ?? 120_000)
    child.on('error', (err) => { const b = Buffer.from(String(err)); stderr.push(b); both.push(b) })
    const text = (bufs: Buffer[]): string => Buffer.concat(bufs).toString('utf8')
    child.on('close', (code) => { clearTimeout(timer); resolve({ status: code ?? -1, stdout: text(stdout), stderr: text(stderr), out: text(both) }) })
  })
}

/** null when `cmd args` exits 0, else why a spec that needs it skips: `<what> is not installed`. */
export function missingTool (cmd: string, args: string[], what = cmd): string | null {
  return spawnSync(cmd, args).status === 0 ? null : `${what} is not installed`
}

/** null when docker-compose runs, else why a spec that needs it skips. */
export function composeSkipReason (): string | null {
  return missingTool('docker-compose', ['version'])
}

/** null when python3 can import docker (docker-py), else why a spec that needs it skips. */
export function dockerPySkipReason (): string | null {
  return missingTool('python3', ['-c', 'import docker'], 'python3-docker')
}

/** The environment for docker-compose against an engine's socket, with a fixed project name. */
export function composeEnv (socket: string, project: string): NodeJS.ProcessEnv {
  return { ...process.env, DOCKER_HOST: `unix://${socket}`, COMPOSE_PROJECT_NAME: project }
}

/** docker-compose in cwd that must succeed: asserts exit status 0 and resolves with stdout + stderr. */
export function composeOk (env: NodeJS.ProcessEnv, cwd: string): (...args: string[]) => Promise<string> {
  return async (...args) => {
    const r = await runTool('docker-compose', args, { env, cwd })
    assert.equal(r.status, 0, `docker-compose ${args.join(' ')}: ${r.stderr}`)
    return r.stdout + r.stderr
  }
}

/** The docker CLI against an engine's socket, where the command must succeed: asserts exit 0, resolves with stdout. */
export type Docker = (...args: string[]) => Promise<string>

export function dockerOk (socket: string): Docker {
  return async (...args) => {
    const r = await dockerCli(socket, args)
    assert.equal(r.status, 0, `docker ${args.join(' ')}: ${r.stderr}`)
    return r.stdout
  }
}
