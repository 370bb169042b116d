// --userland-proxy (default true): with iptables, a forwarder process holds each published host port besides the DNAT
// rule, so no other program can bind the port (and have its traffic silently taken by the DNAT rule); it keeps the
// port across a daemon kill -9, is adopted by the next daemon and goes at stop. --userland-proxy=false: DNAT only.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { join } from 'node:path'
import { once } from 'node:events'
import { execFileSync, type ChildProcess } from 'node:child_process'
import { tmpDir, startEngine, containerSkipReason, hasDockerCli, busyboxTar, uniqueNetworkOptions, daemonNetworkArgs, cleanupDaemon, startDaemonProcess, dockerCli } from '../helpers/engine.js'
import { missingTool, dockerOk } from '../helpers/tools.js'
import { httpGet, freeTcpPort } from '../helpers/net.js'
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

test('iptables with the userland proxy: published ports held by forwarders across a daemon kill -9, freed at stop', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  const sock = join(dir, 'b.sock')
  const n = uniqueNetworkOptions()
  const gateway = n.bip.split('/')[0] as string
  let daemon: ChildProcess = await startDaemonProcess(dir, daemonNetworkArgs(n))
  t.after(async () => { await cleanupDaemon(daemon, dir, n) })
  const docker = dockerOk(sock)
  await docker('import', busyboxTar(), 'busybox:latest')
  const fixed = await freeTcpPort()
  await docker('run', '-d', '--name', 'web', '-p', '0:80', '-p', `${fixed}:81`, 'busybox', 'sh', '-c', 'httpd -p 80 -h /etc && exec httpd -f -p 81 -h /etc')
  const id12 = (await docker('inspect', '--format', '{{.Id}}', 'web')).trim().slice(0, 12)
  const m = /0\.0\.0\.0:(\d+)/.exec(await docker('port', 'web', '80/tcp'))
  assert.ok(m !== null)
  const ports = [Number(m[1]), fixed]
  const forwarders = await forwardersOf(n.networkPrefix)
  assert.equal(forwarders.length, 2, 'a forwarder per published port')
  const held = async (when: string): Promise<void> => {
    for (const p of ports) {
      // the forwarder holds the port: nobody else binds it (a server there would have its traffic taken by DNAT)
      assert.equal(await listenError(p, '0.0.0.0'), 'EADDRINUSE', `${when}: port ${p} on 0.0.0.0`)
      assert.equal(await listenError(p, '127.0.0.1'), 'EADDRINUSE', `${when}: port ${p} on 127.0.0.1`)
      // and the container answers, from loopback and from a host address that is not loopback (the bridge's gateway)
      assert.equal(await hostname(p), `${id12}\n`, `${when}: port ${p} from 127.0.0.1`)
      assert.equal(await hostname(p, gateway), `${id12}\n`, `${when}: port ${p} from ${gateway}`)
    }
  }
  await held('running')

  daemon.kill('SIGKILL')
  await once(daemon, 'exit')
  await held('daemon killed')

  daemon = await startDaemonProcess(dir, daemonNetworkArgs(n))
  await held('daemon restarted')
  assert.deepEqual((await forwardersOf(n.networkPrefix)).sort(), forwarders.sort(), 'the running forwarders are adopted, not started again')

  // the forwarder's bind is the check: an address the host does not have fails the start in dockerd's wording
  const other = await freeTcpPort()
  const bad = await dockerCli(sock, ['run', '-d', '--name', 'nowhere', '-p', `192.0.2.1:${other}:80`, 'busybox', 'true'])
  assert.match(bad.stderr, new RegExp(`failed to bind port 192\\.0\\.2\\.1:${other}/tcp: Error starting userland proxy: listen tcp4 192\\.0\\.2\\.1:${other}: bind: cannot assign requested address`))
  assert.equal((await forwardersOf(n.networkPrefix)).length, 2, 'the failed start leaves no forwarder')
  await docker('rm', 'nowhere')

  await docker('stop', '-t', '1', 'web')
  for (const p of ports) assert.equal(listening(p), false, `port ${p} is free after stop`)
  assert.deepEqual(await forwardersOf(n.networkPrefix), [], 'no forwarder is left')
  // started again: the same fixed port, and a new ephemeral one, held again
  await docker('start', 'web')
  assert.equal(await listenError(fixed, '0.0.0.0'), 'EADDRINUSE')
  assert.equal(await hostname(fixed), `${id12}\n`)
  await docker('rm', '-f', 'web')
  assert.equal(listening(fixed), false)
  assert.deepEqual(await forwardersOf(n.networkPrefix), [])
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
