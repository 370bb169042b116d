// Swarm benchmarks (not part of npm test): the time from a `kill -9` of a task container to its replacement running,
// and from `POST /services/create` of 20 replicas until all 20 run. Starts a Berth daemon with its own bridge, subnet
// and chains and makes it a swarm; --compare runs the same workloads against another engine that is a swarm manager
// (e.g. a dockerd after `docker swarm init`), the engines taking turns run by run. Both services use
// `--restart-delay 0s`, so the figures are the engines' own reaction times, not the default 5 s delay.
//
//   node dist/tools/bench/swarm.js [--compare unix:///path/to/docker.sock] [--runs 5]
import http from 'node:http'
import { execFileSync, type ChildProcess } from 'node:child_process'
import { parseArgs } from 'node:util'
import { randomBytes } from 'node:crypto'
import { type Target, type PrivateNetwork, docker as dockerCli, median, busyboxTar, privateNetwork, startBerthDaemon, compareTarget, gitCommit, stopBerthDaemon } from './common.js'

const { values } = parseArgs({ options: { compare: { type: 'string' }, runs: { type: 'string' } } })
const RUNS = Math.max(1, Math.min(Number(values.runs ?? '5'), 50))

interface Task { ID: string, Slot?: number, DesiredState: string, Status: { State: string, ContainerStatus?: { ContainerID: string, PID: number } } }

const docker = (t: Target, args: string[]): ReturnType<typeof dockerCli> => dockerCli(t, args, 120_000)

async function api (t: Target, method: string, path: string, body?: unknown): Promise<{ status: number, json: unknown }> {
  return await new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
    const req = http.request({ socketPath: t.socket, method, path, headers: payload === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': payload.length } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (d: Buffer) => chunks.push(d))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString()
        let json: unknown = null
        try { json = JSON.parse(text) } catch { json = text }
        resolve({ status: res.statusCode ?? 0, json })
      })
    })
    req.on('error', reject)
    req.end(payload)
  })
}

async function tasks (t: Target, service: string): Promise<Task[]> {
  return (await api(t, 'GET', `/tasks?filters=${encodeURIComponent(JSON.stringify({ service: { [service]: true } }))}`)).json as Task[]
}

const running = (ts: Task[]): Task[] => ts.filter((x) => x.Status.State === 'running' && x.DesiredState === 'running')

async function poll<T> (what: string, fn: () => Promise<T | undefined>, ms = 120_000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (v !== undefined) return v
    if (Date.now() > end) throw new Error(`timed out: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

function spec (name: string, replicas: number): Record<string, unknown> {
  return {
    Name: name,
    TaskTemplate: { ContainerSpec: { Image: 'busybox:latest', Args: ['sleep', '3600'], StopGracePeriod: 1_000_000_000 }, RestartPolicy: { Condition: 'any', Delay: 0 } },
    Mode: { Replicated: { Replicas: replicas } }
  }
}

async function removeService (t: Target, name: string): Promise<void> {
  await api(t, 'DELETE', `/services/${name}`)
  await poll('containers gone', async () => docker(t, ['ps', '-aq', '--filter', `label=com.docker.swarm.service.name=${name}`]).stdout.trim() === '' ? true : undefined)
}

/** ms from kill -9 of the task's container process to a new task running in the same slot. */
async function replaceOnce (t: Target, name: string): Promise<number> {
  const cur = await poll('a running task', async () => running(await tasks(t, name))[0])
  const cid = cur.Status.ContainerStatus?.ContainerID as string
  const pid = Number(docker(t, ['inspect', '--format', '{{.State.Pid}}', cid]).stdout.trim())
  const t0 = process.hrtime.bigint()
  process.kill(pid, 'SIGKILL')
  await poll('the replacement', async () => running(await tasks(t, name)).some((x) => x.ID !== cur.ID && x.Slot === cur.Slot) ? true : undefined)
  return Number(process.hrtime.bigint() - t0) / 1e6
}

/** ms from POST /services/create (20 replicas) until all 20 run. */
async function create20 (t: Target): Promise<number> {
  const name = `bench20-${randomBytes(3).toString('hex')}`
  const t0 = process.hrtime.bigint()
  const r = await api(t, 'POST', '/services/create', spec(name, 20))
  if (r.status !== 201) throw new Error(`${t.name}: create: ${JSON.stringify(r.json)}`)
  await poll('20 running', async () => running(await tasks(t, name)).length === 20 ? true : undefined)
  const ms = Number(process.hrtime.bigint() - t0) / 1e6
  await removeService(t, name)
  return ms
}

async function startBerth (): Promise<{ target: Target, child: ChildProcess, dir: string, network: PrivateNetwork }> {
  const network = privateNetwork('s')
  const { socket, child, dir } = await startBerthDaemon('berth-sbench-', network.args)
  const target = { name: 'berth', socket }
  await poll('the daemon', async () => (await api(target, 'GET', '/_ping').catch(() => ({ status: 0 }))).status === 200 ? true : undefined, 30_000)
  docker(target, ['import', busyboxTar(dir), 'busybox:latest'])
  const init = docker(target, ['swarm', 'init', '--advertise-addr', '127.0.0.1'])
  if (init.status !== 0) throw new Error(`swarm init: ${init.stderr}`)
  return { target, child, dir, network }
}

async function main (): Promise<void> {
  const berth = await startBerth()
  const targets: Target[] = [berth.target]
  targets.push(...compareTarget(values.compare))
  const samples: Record<string, Record<string, number[]>> = {}
  const add = (t: Target, k: string, v: number): void => { ((samples[t.name] ??= {})[k] ??= []).push(v) }
  const svc = `benchkill-${randomBytes(3).toString('hex')}`
  for (const t of targets) {
    const r = await api(t, 'POST', '/services/create', spec(svc, 1))
    if (r.status !== 201) throw new Error(`${t.name}: create: ${JSON.stringify(r.json)}`)
    await poll('1 running', async () => running(await tasks(t, svc)).length === 1 ? true : undefined)
  }
  for (let i = 0; i < RUNS; i++) {
    const order = i % 2 === 0 ? targets : [...targets].reverse()
    for (const t of order) add(t, 'kill9_to_replacement_ms', await replaceOnce(t, svc))
  }
  for (const t of targets) await removeService(t, svc)
  for (let i = 0; i < Math.max(1, Math.ceil(RUNS / 2)); i++) {
    const order = i % 2 === 0 ? targets : [...targets].reverse()
    for (const t of order) add(t, 'create_20_replicas_ms', await create20(t))
  }
  const commit = gitCommit()
  const load = (() => { try { return execFileSync('cat', ['/proc/loadavg'], { encoding: 'utf8' }).split(' ')[0] } catch { return '?' } })()
  process.stdout.write(JSON.stringify({ bench: 'swarm', node: process.version, commit, load, samples }) + '\n')
  for (const k of Object.keys(samples.berth ?? {})) {
    const b = median(samples.berth?.[k] ?? [])
    const o = samples.other?.[k]
    const ratio = o !== undefined ? `  ratio ${(b / median(o)).toFixed(2)}` : ''
    process.stdout.write(`${k.padEnd(26)} berth ${b.toFixed(0)} ms${o !== undefined ? `  other ${median(o).toFixed(0)} ms` : ''}${ratio}\n`)
  }
  docker(berth.target, ['swarm', 'leave', '--force'])
  await stopBerthDaemon(berth, berth.network)
}

main().catch((err: Error) => { process.stderr.write(err.stack + '\n'); process.exitCode = 1 })
