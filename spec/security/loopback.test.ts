// Issues 21.3 and 21.4: loopback stays loopback. The review's attacks, run as it ran them: a process with NET_RAW
// (any container, by default) sends hand-made TCP segments as Ethernet frames to its gateway's MAC with destination
// 127.0.0.1 (spec/security/fixtures/rawget.c), from a container on the default bridge, from one on a user-defined
// network, and from a neighbouring host (a network namespace and a veth pair of the test's own, the host's end
// addressed as a LAN interface would be). None reaches a host server bound to 127.0.0.1 (21.3), nor a container's
// port published on 127.0.0.1 only (21.4); the same frames to an address the host does serve get their answer (the
// attacks are real), and the host itself reaches its loopback mapping. Both with the monitors serving published
// ports (the default) and with --userland-proxy=false (DNAT only, route_localnet on the bridges).
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import net from 'node:net'
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { startEngine, containerSkipReason, hasDockerCli, busyboxTar, tmpDir, ROOT, cleanupDir } from '../helpers/engine.js'
import { dockerOk, missingTool, type Docker } from '../helpers/tools.js'
import { httpGet, freeTcpPort } from '../helpers/net.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed') ??
  missingTool('cc', ['--version'], 'cc (gcc, libc6-dev)') ?? missingTool('iptables', ['-V']) ?? missingTool('ip', ['-V'])

/** rawget's exit codes (see the fixture): an answer, or a completed handshake, means the frames reached a server. */
const ANSWERED = 0
const REACHED = [0, 2, 5]
const DROPPED = 1

const SECRET = `host secret ${randomBytes(4).toString('hex')}`

function sh (cmd: string, args: string[]): { status: number | null, stdout: string, stderr: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8' })
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' }
}

/** The attack tool, built static (it runs in busybox containers) into the test's directory. */
function buildRawget (dir: string): string {
  const out = join(dir, 'rawget')
  const r = sh('cc', ['-O2', '-static', '-o', out, join(ROOT, 'spec', 'security', 'fixtures', 'rawget.c')])
  assert.equal(r.status, 0, r.stderr)
  return out
}

/** An HTTP server answering every path with `body`. */
async function server (t: TestContext, host: string, port: number, body: string): Promise<void> {
  const srv = http.createServer((_req, res) => { res.end(body) })
  await new Promise<void>((resolve, reject) => { srv.once('error', reject); srv.listen(port, host, resolve) })
  t.after(() => { srv.close() })
}

/**
 * From a container on `network`: its gateway answers a ping first (the host then knows the container's MAC, as after
 * any traffic), then rawget sends to the gateway's MAC.
 */
async function fromContainer (docker: Docker, tool: string, network: string, gateway: string, dst: string, port: number): Promise<{ rc: number, out: string }> {
  const script = `ping -c1 -W1 ${gateway} >/dev/null; mac=$(awk '$1 == "${gateway}" { print $4 }' /proc/net/arp); ` +
    `ip=$(ip -4 -o addr show eth0 | awk '{ print $4 }' | cut -d/ -f1); /rawget eth0 $mac $ip ${dst} ${port} /secret 2500; echo "rc=$?"`
  const out = await docker('run', '--rm', '--network', network, '-v', `${tool}:/rawget:ro`, 'busybox', 'sh', '-c', script)
  const m = /rc=(\d+)\s*$/.exec(out)
  assert.ok(m !== null, out)
  return { rc: Number(m[1]), out }
}

/** A neighbouring host: a namespace with a veth pair to the host, on a /30 no route of the host's overlaps. */
interface Neighbour { ns: string, hostIf: string, hostIp: string, ip: string, hostMac: string }

function neighbour (t: TestContext): Neighbour {
  const tag = randomBytes(3).toString('hex')
  const ns = `bsec${tag}`
  const hostIf = `bsec${tag}a`
  const routes = sh('ip', ['-4', 'route', 'show', 'table', 'all']).stdout + sh('ip', ['-4', '-o', 'addr']).stdout
  let base = ''
  for (let i = 0; i < 50 && base === ''; i++) {
    const cand = `10.${250 + Math.floor(Math.random() * 5)}.${Math.floor(Math.random() * 256)}`
    if (!routes.includes(`${cand}.`)) base = cand
  }
  assert.notEqual(base, '', 'a free /30 for the neighbour')
  const last = 4 * Math.floor(Math.random() * 60)
  const n: Neighbour = { ns, hostIf, hostIp: `${base}.${last + 1}`, ip: `${base}.${last + 2}`, hostMac: '' }
  t.after(() => { sh('ip', ['link', 'del', hostIf]); sh('ip', ['netns', 'del', ns]) })
  for (const args of [
    ['netns', 'add', ns],
    ['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns],
    ['addr', 'add', `${n.hostIp}/30`, 'dev', hostIf],
    ['link', 'set', hostIf, 'up'],
    ['-n', ns, 'addr', 'add', `${n.ip}/30`, 'dev', 'eth0'],
    ['-n', ns, 'link', 'set', 'eth0', 'up'],
    ['-n', ns, 'link', 'set', 'lo', 'up']
  ]) assert.equal(sh('ip', args).status, 0, `ip ${args.join(' ')}`)
  // the neighbour's own kernel would reset the connections rawget makes by hand: its resets stay home
  assert.equal(sh('ip', ['netns', 'exec', ns, 'iptables', '-w', '-A', 'OUTPUT', '-p', 'tcp', '--tcp-flags', 'RST', 'RST', '-j', 'DROP']).status, 0)
  n.hostMac = sh('cat', [`/sys/class/net/${hostIf}/address`]).stdout.trim()
  return n
}

function fromNeighbour (n: Neighbour, tool: string, dst: string, port: number): { rc: number, out: string } {
  const r = sh('ip', ['netns', 'exec', n.ns, tool, 'eth0', n.hostMac, n.ip, dst, String(port), '/secret', '2500'])
  return { rc: r.status ?? -1, out: r.stdout }
}

async function scenario (t: TestContext, userlandProxy: boolean): Promise<void> {
  const dir = tmpDir('berth-sec-')
  t.after(async () => { await cleanupDir(dir) })
  const tool = buildRawget(dir)
  const { socket } = await startEngine(t, { options: { userlandProxy } })
  const docker = dockerOk(socket)
  await docker('import', busyboxTar(), 'busybox:latest')
  await docker('network', 'create', 'other')
  const gw = async (network: string): Promise<string> => (await docker('network', 'inspect', '--format', '{{(index .IPAM.Config 0).Gateway}}', network)).trim()
  const bridgeGw = await gw('bridge')
  const otherGw = await gw('other')

  // a host service bound to loopback only, and one on every address (the control: the frames do reach the host)
  const secretPort = await freeTcpPort()
  await server(t, '127.0.0.1', secretPort, SECRET)
  const openPort = await freeTcpPort()
  await server(t, '0.0.0.0', openPort, 'open')

  // 21.3: containers on the default bridge and on a user network, to the host's 127.0.0.1
  for (const [network, gateway] of [['bridge', bridgeGw], ['other', otherGw]] as const) {
    const control = await fromContainer(docker, tool, network, gateway, gateway, openPort)
    assert.ok(REACHED.includes(control.rc), `control: ${network} reaches ${gateway}:${openPort} (rc ${control.rc}) ${control.out}`)
    const attack = await fromContainer(docker, tool, network, gateway, '127.0.0.1', secretPort)
    assert.equal(attack.rc, DROPPED, `a container on ${network} reached the host's 127.0.0.1:${secretPort}: ${attack.out}`)
    assert.ok(!attack.out.includes(SECRET))
  }

  // 21.4: a port published on 127.0.0.1 only
  const local = await freeTcpPort()
  const open = await freeTcpPort()
  await docker('run', '-d', '--name', 'web', '-p', `127.0.0.1:${local}:80`, '-p', `${open}:80`, 'busybox', 'sh', '-c', 'echo -n web > /secret && exec httpd -f -p 80 -h /')
  let served = ''
  for (let i = 0; i < 50 && served === ''; i++) served = await httpGet(local, '/secret').catch(async () => { await new Promise((resolve) => setTimeout(resolve, 100)); return '' })
  assert.equal(served, 'web', 'the host reaches its loopback mapping')
  // from the other network: the port published on every address answers through the gateway, the loopback one not
  const viaGateway = await fromContainer(docker, tool, 'other', otherGw, otherGw, open)
  assert.ok(REACHED.includes(viaGateway.rc), `control: the other network reaches ${otherGw}:${open} (rc ${viaGateway.rc})`)
  const cross = await fromContainer(docker, tool, 'other', otherGw, '127.0.0.1', local)
  assert.equal(cross.rc, DROPPED, `a container on another network reached 127.0.0.1:${local}: ${cross.out}`)

  // from a neighbouring host: the published port on the host's LAN address answers, the loopback one not
  const n = neighbour(t)
  const lan = fromNeighbour(n, tool, n.hostIp, open)
  assert.equal(lan.rc, ANSWERED, `control: the neighbour reaches ${n.hostIp}:${open} (rc ${lan.rc})`)
  assert.match(lan.out, /web$/)
  const remote = fromNeighbour(n, tool, '127.0.0.1', local)
  assert.equal(remote.rc, DROPPED, `a neighbouring host reached 127.0.0.1:${local}: ${remote.out}`)
  const hostLoopback = fromNeighbour(n, tool, '127.0.0.1', secretPort)
  assert.equal(hostLoopback.rc, DROPPED, `a neighbouring host reached the host's 127.0.0.1:${secretPort}: ${hostLoopback.out}`)

  // and the host's own clients are unaffected: the loopback mapping still serves the host
  const c = net.connect(local, '127.0.0.1')
  await new Promise<void>((resolve, reject) => { c.once('connect', resolve); c.once('error', reject) })
  c.destroy()
}

test('loopback stays loopback with the monitors serving published ports (default)', { skip: skip ?? false }, async (t) => {
  await scenario(t, true)
})

test('loopback stays loopback with --userland-proxy=false (DNAT only, route_localnet on the bridges)', { skip: skip ?? false }, async (t) => {
  await scenario(t, false)
})
