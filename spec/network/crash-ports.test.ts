// Issue 22.2: a daemon killed with -9 at random moments while containers with published ports start, stop and go
// leaves nothing behind that no running container owns. After each restart: every process holding a port is a
// running container's monitor (or its relay) and holds exactly that container's published ports, which answer; no
// monitor, namespace, veth or DNAT rule is left for a container that is not running (a container found Created
// after the crash has none); no forwarder process exists at all.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { once } from 'node:events'
import { tmpDir, containerSkipReason, hasDockerCli, busyboxTar, uniqueNetworkOptions, daemonNetworkArgs, cleanupDaemon, startDaemonProcess, dockerCli } from '../helpers/engine.js'
import { missingTool, dockerOk } from '../helpers/tools.js'
import { httpGet } from '../helpers/net.js'
import { until } from '../helpers/poll.js'
import { forwardersOf } from '../../lib/network/host-ports.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed') ?? missingTool('iptables', ['-V']) ?? missingTool('ss', ['-V'])

const ROUNDS = 6

/** The monitors of this engine's containers (their --state is under its exec root), by container ID, with their relays. */
function monitors (execRoot: string): Map<string, { pid: number, relays: number[] }> {
  const out = new Map<string, { pid: number, relays: number[] }>()
  const children = new Map<number, number[]>()
  const procs: Array<{ pid: number, argv: string[] }> = []
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    let stat: string, cmdline: string
    try { stat = readFileSync(`/proc/${d}/stat`, 'utf8'); cmdline = readFileSync(`/proc/${d}/cmdline`, 'utf8') } catch { continue }
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    // a relay is a fork of its monitor: the same command line, its own name
    if (stat.includes('(berth-ports)')) children.set(ppid, [...(children.get(ppid) ?? []), Number(d)])
    else procs.push({ pid: Number(d), argv: cmdline.split('\0') })
  }
  for (const p of procs) {
    const state = p.argv[p.argv.indexOf('--state') + 1] ?? ''
    const id = p.argv[p.argv.indexOf('--id') + 1] ?? ''
    if (!(p.argv[0] ?? '').endsWith('berth-shim') || !state.startsWith(execRoot) || p.argv.includes('--exec')) continue
    out.set(id, { pid: p.pid, relays: children.get(p.pid) ?? [] })
  }
  return out
}

/** Listening TCP and bound UDP host ports by holding PID (ss). */
function portsByPid (): Map<number, Set<string>> {
  const out = new Map<number, Set<string>>()
  for (const proto of ['tcp', 'udp'] as const) {
    const text = execFileSync('ss', [proto === 'tcp' ? '-Hltnp' : '-Hlunp'], { encoding: 'utf8' })
    for (const line of text.split('\n')) {
      const port = /:(\d+)\s+\S+:\S+\s/.exec(line)?.[1]
      if (port === undefined) continue
      for (const m of line.matchAll(/pid=(\d+)/g)) {
        const pid = Number(m[1])
        out.set(pid, (out.get(pid) ?? new Set()).add(`${port}/${proto}`))
      }
    }
  }
  return out
}

interface Container { id: string, state: string, ports: Set<string> }

async function containers (sock: string): Promise<Container[]> {
  const r = await dockerCli(sock, ['ps', '-a', '--no-trunc', '--format', '{{.ID}} {{.State}}'])
  assert.equal(r.status, 0, r.stderr)
  const out: Container[] = []
  for (const line of r.stdout.trim().split('\n').filter((l) => l !== '')) {
    const [id = '', state = ''] = line.split(' ')
    const ports = new Set<string>()
    if (state === 'running') {
      const p = await dockerCli(sock, ['inspect', '--format', '{{range $k, $v := .NetworkSettings.Ports}}{{range $v}}{{.HostPort}}/{{$k}} {{end}}{{end}}', id])
      // hostPort/containerPort/proto
      for (const m of p.stdout.matchAll(/(\d+)\/\d+\/(tcp|udp)/g)) ports.add(`${m[1]}/${m[2]}`)
    }
    out.push({ id, state, ports })
  }
  return out
}

/** What is wrong now ('' when nothing is). */
async function leftovers (sock: string, dir: string, prefix: string): Promise<string> {
  const execRoot = join(dir, 'run')
  const all = await containers(sock)
  const running = new Map(all.filter((c) => c.state === 'running').map((c) => [c.id, c]))
  const mons = monitors(execRoot)
  const held = portsByPid()
  for (const [id, m] of mons) {
    const c = running.get(id)
    if (c === undefined) return `a monitor (${m.pid}) of ${id.slice(0, 12)}, which is ${all.find((x) => x.id === id)?.state ?? 'gone'}`
    for (const pid of [m.pid, ...m.relays]) {
      for (const p of held.get(pid) ?? []) if (!c.ports.has(p)) return `${pid} of ${id.slice(0, 12)} holds ${p}, not one of its ports (${[...c.ports].join(' ')})`
    }
  }
  for (const c of running.values()) {
    const m = mons.get(c.id)
    if (m === undefined) return `running ${c.id.slice(0, 12)} has no monitor`
    for (const p of c.ports) if (!(held.get(m.pid)?.has(p) ?? false)) return `port ${p} of ${c.id.slice(0, 12)} is not held by its monitor`
    if (c.ports.size > 0 && m.relays.length !== 1) {
      return `${c.id.slice(0, 12)} (monitor ${m.pid}) has ${m.relays.length} relays`
    }
  }
  const netns = existsSync(join(execRoot, 'netns')) ? readdirSync(join(execRoot, 'netns')) : []
  for (const f of netns) if (![...running.keys()].some((id) => id.startsWith(f))) return `namespace ${f} of a container not running`
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.includes(` ${join(execRoot, 'netns')}/`))
  if (mounts.length > netns.length) return `${mounts.length - netns.length} namespace mounts without a file`
  const veths = execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }).split('\n').filter((l) => new RegExp(`^\\d+:\\s+${prefix.toLowerCase()}v`).test(l)).length
  const endpoints = (await Promise.all([...running.keys()].map(async (id) => (await dockerCli(sock, ['inspect', '--format', '{{len .NetworkSettings.Networks}}', id])).stdout.trim()))).reduce((a, b) => a + Number(b), 0)
  if (veths !== endpoints) return `${veths} veths for ${endpoints} endpoints of running containers`
  const dnat = execFileSync('iptables', ['-w', '-t', 'nat', '-S', prefix], { encoding: 'utf8' }).split('\n').filter((l) => l.includes('DNAT'))
  const published = [...running.values()].reduce((a, c) => a + c.ports.size, 0)
  if (dnat.length !== published) return `${dnat.length} DNAT rules for ${published} published ports`
  if ((await forwardersOf(prefix)).length > 0) return 'a forwarder process'
  for (const c of all) if (c.state === 'created' && mons.has(c.id)) return `created ${c.id.slice(0, 12)} has a monitor`
  return ''
}

test('kill -9 at random moments while containers with -p start and stop: nothing outlives its container', { skip: skip ?? false, timeout: 600_000 }, async (t) => {
  const dir = tmpDir()
  const sock = join(dir, 'b.sock')
  const n = uniqueNetworkOptions()
  let daemon: ChildProcess = await startDaemonProcess(dir, daemonNetworkArgs(n))
  t.after(async () => { await cleanupDaemon(daemon, dir, n) })
  const docker = dockerOk(sock)
  await docker('import', busyboxTar(), 'busybox:latest')
  await docker('network', 'create', 'app')
  // a steady container whose ports must answer after every crash
  await docker('run', '-d', '--name', 'steady', '-p', '0:80', '-p', '0:80/udp', 'busybox', 'httpd', '-f', '-p', '80', '-h', '/etc')
  const steadyId = (await docker('inspect', '--format', '{{.Id}}', 'steady')).trim()
  let seq = 0
  for (let round = 0; round < ROUNDS; round++) {
    // work in flight: runs with ports (some removed at exit), stops and removals of earlier ones
    const existing = (await containers(sock)).filter((c) => c.id !== steadyId)
    const ops: Array<Promise<unknown>> = []
    for (let i = 0; i < 3; i++) {
      const name = `c${seq++}`
      const net = i % 2 === 0 ? 'bridge' : 'app'
      ops.push(dockerCli(sock, ['run', '-d', '--name', name, '--network', net, '-p', '0:80', '-p', '0:81', '-p', '0:82/udp', 'busybox', 'sleep', '600']))
    }
    ops.push(dockerCli(sock, ['run', '--rm', '-p', '0:80', 'busybox', 'true']))
    for (const c of existing.slice(0, 2)) ops.push(dockerCli(sock, ['stop', '-t', '0', c.id]))
    for (const c of existing.slice(2, 4)) ops.push(dockerCli(sock, ['rm', '-f', c.id]))
    await new Promise((resolve) => setTimeout(resolve, 30 + Math.floor(Math.random() * 900)))
    daemon.kill('SIGKILL')
    await once(daemon, 'exit')
    await Promise.allSettled(ops)
    daemon = await startDaemonProcess(dir, daemonNetworkArgs(n))

    let why = ''
    await until(`no leftovers after crash ${round}`, async () => { why = await leftovers(sock, dir, n.networkPrefix); return why === '' }, 20_000, 200)
      .catch(() => { assert.fail(`after crash ${round}: ${why}`) })
    // the steady container's ports were served throughout and still are
    const port = Number(/:(\d+)/.exec(await docker('port', 'steady', '80/tcp'))?.[1])
    assert.equal(await httpGet(port, '/hostname'), `${steadyId.slice(0, 12)}\n`, `after crash ${round}`)
  }
  // and after the last one, everything goes with its containers
  await docker('rm', '-f', ...(await containers(sock)).map((c) => c.id))
  await until('nothing left after rm', async () => (await leftovers(sock, dir, n.networkPrefix)) === '' && monitors(join(dir, 'run')).size === 0, 20_000, 200)
})
