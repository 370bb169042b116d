// The container's own resolver as clients meet it: over TCP as well as UDP, PTR and AAAA answers as dockerd's, and a
// program of the container that binds port 53 itself (the resolver is reached through the namespace's redirection,
// as dockerd's, so the port stays the container's).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startEngine, containerSkipReason, hasDockerCli, busyboxTar } from '../helpers/engine.js'
import { missingTool, dockerOk } from '../helpers/tools.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed') ?? missingTool('iptables', ['-V'])

/** node from the host's /usr in a busybox container (busybox has no TCP DNS client and no server). */
const NODE = ['-v', '/usr:/usr:ro', '-v', '/lib:/lib:ro', '-v', '/lib64:/lib64:ro']

/** A TCP DNS query for `name` (A) to 127.0.0.11:53; prints the answer's addresses. */
const TCP_QUERY = (name: string): string => [
  "const q=Buffer.concat([Buffer.from('abcd01000001000000000000','hex'),",
  ...name.split('.').map((l) => `Buffer.from([${l.length}]),Buffer.from('${l}'),`),
  "Buffer.from([0,0,1,0,1])]);const l=Buffer.alloc(2);l.writeUInt16BE(q.length);",
  "const s=require('net').connect(53,'127.0.0.11',()=>s.write(Buffer.concat([l,q])));let b=Buffer.alloc(0);",
  "s.on('data',(d)=>{b=Buffer.concat([b,d]);if(b.length>=2&&b.length>=2+b.readUInt16BE(0)){const m=b.subarray(2);",
  "const n=m.readUInt16BE(6);const out=[];for(let i=0;i<n;i++){const o=m.length-16*(n-i);out.push(m.subarray(o+12,o+16).join('.'))}",
  "console.log('rcode',m[3]&15,out.join(' '));s.end()}})"
].join('')

test('the container\'s resolver: TCP, PTR and AAAA as dockerd\'s; port 53 stays the container\'s', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  const ok = dockerOk(socket)
  await ok('import', busyboxTar(), 'busybox:latest')
  await ok('network', 'create', 'app')
  await ok('run', '-d', '--name', 'srv', '--network', 'app', 'busybox', 'sleep', '600')
  const ip = (await ok('inspect', '--format', '{{.NetworkSettings.Networks.app.IPAddress}}', 'srv')).trim()

  await t.test('a query over TCP', async () => {
    const out = await ok('run', '--rm', '--network', 'app', ...NODE, 'busybox', process.execPath, '-e', TCP_QUERY('srv'))
    assert.equal(out.trim(), `rcode 0 ${ip}`)
  })

  await t.test('PTR of a network address is name.network; AAAA of a name without IPv6 is an empty answer', async () => {
    assert.match(await ok('run', '--rm', '--network', 'app', 'busybox', 'nslookup', ip), new RegExp(`name = srv\\.app`))
    const aaaa = await ok('run', '--rm', '--network', 'app', 'busybox', 'nslookup', '-type=aaaa', 'srv')
    assert.doesNotMatch(aaaa, /Address: /)
    assert.doesNotMatch(aaaa, /NXDOMAIN|SERVFAIL|can't find/)
  })

  await t.test('a program of the container binds port 53 on every address, and names still resolve', async () => {
    const server = "const d=require('dgram').createSocket('udp4');d.bind(53,'0.0.0.0',()=>{require('net').createServer().listen(53,'0.0.0.0',()=>{console.log('bound');require('fs').writeFileSync('/tmp/bound','')})})"
    const out = await ok('run', '--rm', '--network', 'app', ...NODE, 'busybox', 'sh', '-c',
      `${process.execPath} -e "${server}" & for i in $(seq 100); do [ -e /tmp/bound ] && break; sleep 0.1; done; /bin/busybox nslookup srv; kill $!`)
    assert.match(out, /^bound$/m)
    assert.match(out, new RegExp(`Address: ${ip.replace(/\./g, '\\.')}`))
  })
})
