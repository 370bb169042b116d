// Issue 21.6: the embedded DNS resolver serves its own container and nobody else, and forwards a container's loopback
// --dns server from the container's namespace. The attacks as the review ran them: a container of another network
// and an unprivileged host user asking a network's resolver address for its names and for outside names; a
// container with --dns 127.0.0.1 while a server on the host's 127.0.0.1:53 waits for its queries.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar, tmpDir } from '../helpers/engine.js'
import { missingTool, dockerOk } from '../helpers/tools.js'
import { fakeDns, type FakeDns } from '../helpers/net.js'
import { hostUserSkipReason, makeHostUser } from '../helpers/host-user.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed') ??
  missingTool('iptables', ['-V']) ?? missingTool('ss', ['-V'], 'iproute2') ?? hostUserSkipReason()

/** A DNS server for the container's own loopback: node from the host's /usr, answering A queries with 10.20.30.40. */
const CONTAINER_DNS = [
  "const s=require('dgram').createSocket('udp4');",
  's.on("message",(q,r)=>{let o=12;while(q[o])o+=q[o]+1;o+=5;const t=q.readUInt16BE(o-4);',
  'const h=Buffer.from(q.subarray(0,o));h[2]=0x81;h[3]=0x80;h.writeUInt16BE(t===1?1:0,6);h.writeUInt16BE(0,8);h.writeUInt16BE(0,10);',
  'const a=t===1?Buffer.from([0xc0,12,0,1,0,1,0,0,0,60,0,4,10,20,30,40]):Buffer.alloc(0);s.send(Buffer.concat([h,a]),r.port,r.address)});',
  "s.bind(53,'127.0.0.1',()=>require('fs').writeFileSync('/tmp/ready',''))"
].join('')

/** Listening sockets of the host's namespace on port 53 (UDP and TCP), as `address:53`. */
function hostPort53 (): string[] {
  const out = spawnSync('ss', ['-H', '-l', '-n', '-u', '-t', 'sport', '=', ':53'], { encoding: 'utf8' }).stdout ?? ''
  return out.split('\n').map((l) => l.trim().split(/\s+/)[4] ?? '').filter((a) => a !== '')
}

test('the embedded resolver answers its own container only, from the container\'s namespace', { skip: skip ?? false }, async (t) => {
  // the host's resolver: a fake one on a loopback address of its own, which knows outside.example
  const a = 1 + Math.floor(Math.random() * 250)
  const upstream = await fakeDns(`127.53.${a}.${1 + Math.floor(Math.random() * 250)}`, { 'outside.example': '10.1.2.3' })
  t.after(() => { upstream.close() })
  const etc = tmpDir('berth-resolv-')
  t.after(() => { rmSync(etc, { recursive: true, force: true }) })
  const resolvConf = join(etc, 'resolv.conf')
  writeFileSync(resolvConf, `nameserver ${upstream.address}\n`)
  const { socket } = await startEngine(t, { options: { resolvConf } })
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  const ok = dockerOk(socket)
  await ok('import', busyboxTar(), 'busybox:latest')
  await ok('network', 'create', 'front')
  await ok('network', 'create', 'back')
  await ok('run', '-d', '--name', 'secret', '--network', 'back', 'busybox', 'sleep', '600')
  await ok('run', '-d', '--name', 'spy', '--network', 'front', 'busybox', 'sleep', '600')
  const secretIp = (await ok('inspect', '--format', '{{.NetworkSettings.Networks.back.IPAddress}}', 'secret')).trim()
  const gateways = await Promise.all(['front', 'back', 'bridge'].map(async (n) => (await ok('network', 'inspect', '--format', '{{(index .IPAM.Config 0).Gateway}}', n)).trim()))
  const backGw = gateways[1] as string
  // the resolver works for its own container (else the refusals below prove nothing)
  assert.match(await ok('exec', 'spy', 'nslookup', 'spy'), /Address: \d/)
  assert.match(await ok('exec', 'spy', 'nslookup', 'outside.example'), /10\.1\.2\.3/)

  await t.test('a container of another network gets no name of it and no forwarding, at any address', async () => {
    for (const server of [backGw, '127.0.0.11']) {
      const r = await docker('exec', 'spy', 'nslookup', '-timeout=2', 'secret', server)
      assert.notEqual(r.status, 0, `${server} answered secret: ${r.stdout}`)
      assert.doesNotMatch(r.stdout, new RegExp(secretIp.replace(/\./g, '\\.')))
    }
    const fwd = await docker('exec', 'spy', 'nslookup', '-timeout=2', 'outside.example', backGw)
    assert.notEqual(fwd.status, 0, `${backGw} forwarded for another network: ${fwd.stdout}`)
    // nothing of ours listens on port 53 in the host's namespace
    for (const listener of hostPort53()) assert.ok(!gateways.some((g) => listener.startsWith(`${g}:`)), `host listener ${listener}`)
  })

  await t.test('an unprivileged host user gets nothing from any address of the engine', async () => {
    const user = makeHostUser(t)
    for (const server of gateways) {
      const r = await user.run('busybox', ['nslookup', '-timeout=2', 'secret', server])
      assert.notEqual(r.status, 0, `${server} answered a host user: ${r.stdout}`)
      const f = await user.run('busybox', ['nslookup', '-timeout=2', 'outside.example', server])
      assert.notEqual(f.status, 0, `${server} forwarded for a host user: ${f.stdout}`)
    }
  })

  await t.test('--dns 127.0.0.1 is the container\'s loopback: the host\'s 127.0.0.1:53 never gets the query', async () => {
    let hostLo: FakeDns
    try { hostLo = await fakeDns('127.0.0.1', { 'leak.example': '10.9.9.9' }) } catch (err) {
      assert.fail(`cannot listen on the host's 127.0.0.1:53 for this test: ${String(err)}`)
    }
    t.after(() => { hostLo.close() })
    const none = await docker('run', '--rm', '--network', 'front', '--dns', '127.0.0.1', 'busybox', 'nslookup', '-timeout=2', 'leak.example')
    assert.notEqual(none.status, 0)
    assert.doesNotMatch(none.stdout, /10\.9\.9\.9/)
    // a server on the container's own loopback answers instead
    const own = await ok('run', '--rm', '--network', 'front', '--dns', '127.0.0.1', '-v', '/usr:/usr:ro', '-v', '/lib:/lib:ro', '-v', '/lib64:/lib64:ro',
      'busybox', 'sh', '-c', `${process.execPath} -e "${CONTAINER_DNS.replace(/"/g, '\\"')}" & for i in $(seq 50); do [ -e /tmp/ready ] && break; sleep 0.1; done; /bin/busybox nslookup leak.example`)
    assert.match(own, /10\.20\.30\.40/)
    assert.deepEqual(hostLo.queries, [])
    // its resolv.conf names the resolver only; --dns is the resolver's upstream (dockerd's ExtServers)
    assert.match(await ok('run', '--rm', '--network', 'front', '--dns', '127.0.0.1', 'busybox', 'cat', '/etc/resolv.conf'), /^nameserver 127\.0\.0\.11$/m)
  })
})
