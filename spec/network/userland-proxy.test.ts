// --userland-proxy (default true): with iptables, the container's monitor holds each published host port besides the
// DNAT rule (one unprivileged relay process per container, none per port), so no other program can bind the port
// (and have its traffic silently taken by the DNAT rule); the ports stay held and served across a daemon kill -9 and
// go with the container's process. --userland-proxy=false: DNAT only.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { join } from 'node:path'
import { once } from 'node:events'
import { execFileSync, type ChildProcess } from 'node:child_process'
import { tmpDir, startEngine, containerSkipReason, hasDockerCli, busyboxTar, uniqueNetworkOptions, daemonNetworkArgs, cleanupDaemon, startDaemonProcess, dockerCli } from '../helpers/engine.js'
import { missingTool, dockerOk } from '../helpers/tools.js'
import { httpGet, freeTcpPort, freeUdpPort, udpAsk } from '../helpers/net.js'
import { portHolders, procInfo } from '../helpers/ports.js'
import { forwardersOf } from '../../lib/network/host-ports.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed') ?? missingTool('iptables', ['-V'])

/**
 * Whether a socket listens on a TCP port now. After a stop this, not a bind attempt, is what says the forwarder let
 * the port go: on a host shared with other tests, an outgoing connection may take a just-freed port as its local one.
 */
function listening (port: number): boolean {
  return execFileSync('ss', ['-Htln', `sport = :${port}`], { encoding: 'utf8' }).trim() !== ''
}

/** Resolves with the listen error's code ('' when the listen succeeded: the server is closed again). */
async function listenError (port: number, host: string): Promise<string> {
  const srv = net.createServer()
  return await new Promise((resolve) => {
    srv.once('error', (err: NodeJS.ErrnoException) => { resolve(err.code ?? String(err)) })
    srv.listen({ port, host, exclusive: true }, () => { srv.close(() => { resolve('') }) })
  })
}

/** GET /hostname on a published port, retried while the container's server starts. */
async function hostname (port: number, host = '127.0.0.1'): Promise<string> {
  let body = ''
  for (let i = 0; i < 50 && body === ''; i++) body = await httpGet(port, '/hostname', host).catch(async () => { await new Promise((resolve) => setTimeout(resolve, 100)); return '' })
  return body
}

test('iptables with the userland proxy: published ports held by the container\'s monitor across a daemon kill -9, freed at stop', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  const sock = join(dir, 'b.sock')
  const n = uniqueNetworkOptions()
  const gateway = n.bip.split('/')[0] as string
  let daemon: ChildProcess = await startDaemonProcess(dir, daemonNetworkArgs(n))
  t.after(async () => { await cleanupDaemon(daemon, dir, n) })
  const docker = dockerOk(sock)
  await docker('import', busyboxTar(), 'busybox:latest')
  const fixed = await freeTcpPort()
  const udp = await freeUdpPort()
  // HTTP on 80 and 81 (GET /hostname) and UDP on 5353 (pong), from one process: node from the host's /usr
  const server = "const os = require('os'); const h = (q, r) => { r.end(os.hostname() + '\\n') }; " +
    "for (const p of [80, 81]) require('http').createServer(h).listen(p); " +
    "const s = require('dgram').createSocket('udp4'); s.on('message', (m, r) => { s.send('pong ' + m, r.port, r.address) }); s.bind(5353)"
  await docker('run', '-d', '--name', 'web', '-p', '0:80', '-p', `${fixed}:81`, '-p', `${udp}:5353/udp`,
    '-v', '/usr:/usr:ro', '-v', '/lib:/lib:ro', '-v', '/lib64:/lib64:ro', 'busybox', process.execPath, '-e', server)
  const id12 = (await docker('inspect', '--format', '{{.Id}}', 'web')).trim().slice(0, 12)
  const monitor = procInfo(Number((await docker('inspect', '--format', '{{.State.Pid}}', 'web')).trim()))?.ppid ?? 0
  const m = /0\.0\.0\.0:(\d+)/.exec(await docker('port', 'web', '80/tcp'))
  assert.ok(m !== null)
  const ports = [Number(m[1]), fixed]
  // the container's monitor holds them all, and one child of it serves them all without root's rights
  const holders = [...new Set([...ports.flatMap((p) => portHolders('tcp', p)), ...portHolders('udp', udp)])].sort((a, b) => a - b)
  const relays = holders.filter((pid) => pid !== monitor)
  assert.ok(holders.includes(monitor), `the monitor ${monitor} holds the ports (holders ${holders.join(' ')})`)
  assert.equal(relays.length, 1, `one relay serves the three ports (holders ${holders.join(' ')})`)
  const relay = procInfo(relays[0] as number)
  assert.ok(relay !== null)
  assert.equal(relay.ppid, monitor, 'the relay is a child of the container\'s monitor')
  assert.equal(relay.uid, 65534, 'the relay runs as nobody')
  assert.equal(relay.capEff, 0n, 'the relay has no capability')
  assert.equal(relay.noNewPrivs, true, 'the relay cannot gain any')
  assert.deepEqual(await forwardersOf(n.networkPrefix), [], 'no forwarder process')
  const held = async (when: string): Promise<void> => {
    for (const p of ports) {
      // the monitor holds the port: nobody else binds it (a server there would have its traffic taken by DNAT)
      assert.equal(await listenError(p, '0.0.0.0'), 'EADDRINUSE', `${when}: port ${p} on 0.0.0.0`)
      assert.equal(await listenError(p, '127.0.0.1'), 'EADDRINUSE', `${when}: port ${p} on 127.0.0.1`)
      // and the container answers, from loopback and from a host address that is not loopback (the bridge's gateway)
      assert.equal(await hostname(p), `${id12}\n`, `${when}: port ${p} from 127.0.0.1`)
      assert.equal(await hostname(p, gateway), `${id12}\n`, `${when}: port ${p} from ${gateway}`)
    }
    assert.equal(await udpAsk(udp, when), `pong ${when}`, `${when}: udp port ${udp}`)
  }
  await held('running')

  daemon.kill('SIGKILL')
  await once(daemon, 'exit')
  await held('daemon killed')

  daemon = await startDaemonProcess(dir, daemonNetworkArgs(n))
  await held('daemon restarted')
  assert.deepEqual(portHolders('tcp', fixed), holders, 'the same processes serve on: nothing is started again')

  // an address the host does not have fails the start in dockerd's wording, and leaves nothing
  const other = await freeTcpPort()
  const bad = await dockerCli(sock, ['run', '-d', '--name', 'nowhere', '-p', `192.0.2.1:${other}:80`, 'busybox', 'true'])
  assert.match(bad.stderr, new RegExp(`failed to bind port 192\\.0\\.2\\.1:${other}/tcp: Error starting userland proxy: listen tcp4 192\\.0\\.2\\.1:${other}: bind: cannot assign requested address`))
  await docker('rm', 'nowhere')

  await docker('stop', '-t', '1', 'web')
  for (const p of ports) assert.equal(listening(p), false, `port ${p} is free after stop`)
  assert.deepEqual(portHolders('udp', udp), [], `udp port ${udp} is free after stop`)
  assert.equal(procInfo(relay.pid), null, 'the relay is gone')
  // started again: the same fixed port, and a new ephemeral one, held again
  await docker('start', 'web')
  assert.equal(await listenError(fixed, '0.0.0.0'), 'EADDRINUSE')
  assert.equal(await hostname(fixed), `${id12}\n`)
  await docker('rm', '-f', 'web')
  assert.equal(listening(fixed), false)
})

test('--userland-proxy=false: DNAT only, the host port is not held', { skip: skip ?? false }, async (t) => {
  const { socket, engine } = await startEngine(t, { options: { userlandProxy: false } })
  const docker = dockerOk(socket)
  await docker('import', busyboxTar(), 'busybox:latest')
  const port = await freeTcpPort()
  await docker('run', '-d', '--name', 'web', '-p', `${port}:80`, 'busybox', 'httpd', '-f', '-p', '80', '-h', '/etc')
  const id12 = (await docker('inspect', '--format', '{{.Id}}', 'web')).trim().slice(0, 12)
  assert.equal(await hostname(port), `${id12}\n`)
  // nothing holds the port: another program binds it, and DNAT takes the traffic meant for it (dockerd's behaviour
  // with --userland-proxy=false)
  const srv = net.createServer((c) => { c.end('HTTP/1.0 200 OK\r\n\r\nthe host server\n') })
  await new Promise<void>((resolve) => { srv.listen(port, '0.0.0.0', resolve) })
  t.after(() => { srv.close() })
  assert.equal(await hostname(port), `${id12}\n`)
  assert.deepEqual(await forwardersOf(engine.network.prefix), [], 'no forwarder')
})
