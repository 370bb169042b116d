// The Engine API on TCP: mutual TLS as the docker CLI speaks it (DOCKER_TLS_VERIFY/DOCKER_CERT_PATH, certificates
// made here by openssl), no plain TCP on a non-loopback address unless asked for, and on every TCP listener no
// request a web page could make: Origin refused, Host must name the listener, OPTIONS not a blanket 200, JSON
// bodies only as application/json.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import http from 'node:http'
import https from 'node:https'
import { readFileSync } from 'node:fs'
import { createEngine, type Engine } from '../../lib/index.js'
import { tmpDir, cleanupDir, containerSkipReason, uniqueNetworkOptions, hasDockerCli, request } from '../helpers/engine.js'

const skip = containerSkipReason() ?? (spawnSync('openssl', ['version']).status === 0 ? null : 'openssl is not installed')

function openssl (cwd: string, args: string[]): void {
  const r = spawnSync('openssl', args, { cwd, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`)
}

/** A CA, a server certificate for 127.0.0.1/localhost and a client certificate, as DOCKER_CERT_PATH lays them out. */
function makeCerts (dir: string): { ca: string, serverCert: string, serverKey: string, clientDir: string } {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  openssl(dir, ['req', '-x509', ...ec, '-keyout', 'ca-key.pem', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=berth test CA'])
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n')
  openssl(dir, ['req', ...ec, '-keyout', 'server-key.pem', '-out', 'server.csr', '-subj', '/CN=localhost'])
  openssl(dir, ['x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca-key.pem', '-CAcreateserial', '-out', 'server-cert.pem', '-days', '2', '-extfile', 'server.ext'])
  writeFileSync(join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n')
  openssl(dir, ['req', ...ec, '-keyout', 'key.pem', '-out', 'client.csr', '-subj', '/CN=client'])
  openssl(dir, ['x509', '-req', '-in', 'client.csr', '-CA', 'ca.pem', '-CAkey', 'ca-key.pem', '-CAcreateserial', '-out', 'cert.pem', '-days', '2', '-extfile', 'client.ext'])
  return { ca: join(dir, 'ca.pem'), serverCert: join(dir, 'server-cert.pem'), serverKey: join(dir, 'server-key.pem'), clientDir: dir }
}

async function docker (env: Record<string, string>, args: string[]): Promise<{ status: number, stdout: string, stderr: string }> {
  return await new Promise((resolve) => {
    const base = { ...process.env }
    delete base.DOCKER_TLS_VERIFY; delete base.DOCKER_CERT_PATH; delete base.DOCKER_CONTEXT
    const child = spawn('docker', args, { env: { ...base, ...env } })
    let out = ''; let err = ''
    child.stdout.on('data', (d: Buffer) => { out += d.toString() })
    child.stderr.on('data', (d: Buffer) => { err += d.toString() })
    const timer = setTimeout(() => { child.kill('SIGKILL') }, 30_000)
    child.on('close', (code) => { clearTimeout(timer); resolve({ status: code ?? -1, stdout: out, stderr: err }) })
  })
}

interface Res { status: number, text: string }
async function tcpRequest (o: { port: number, method: string, path: string, headers?: Record<string, string>, body?: string, tls?: https.RequestOptions }): Promise<Res> {
  return await new Promise((resolve, reject) => {
    const mod = o.tls !== undefined ? https : http
    const req = mod.request({ host: '127.0.0.1', port: o.port, method: o.method, path: o.path, headers: o.headers ?? {}, agent: false, ...(o.tls ?? {}) }, (res) => {
      let text = ''
      res.on('data', (d: Buffer) => { text += d.toString() })
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, text }) })
    })
    req.on('error', reject)
    req.end(o.body)
  })
}

function tcpPort (engine: Engine): number {
  const a = engine.addresses.find((x) => x.kind === 'tcp')
  assert.ok(a !== undefined && a.kind === 'tcp')
  return a.port
}

test('the Engine API on TCP', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  const engines: Engine[] = []
  t.after(async () => {
    for (const e of engines) { await e.close(); await e.network.purgeHost() }
    await cleanupDir(dir)
  })

  await t.test('a non-loopback address without TLS is refused before anything is touched; an explicit flag allows it', async () => {
    const dataRoot = join(dir, 'open')
    await assert.rejects(createEngine({ dataRoot, hosts: ['tcp://0.0.0.0:0'], ...uniqueNetworkOptions() }), /refusing to listen on tcp:\/\/0\.0\.0\.0:0 without TLS.*--allow-insecure-tcp/)
    assert.ok(!existsSync(dataRoot))
    const e = await createEngine({ dataRoot, hosts: ['tcp://0.0.0.0:0'], allowInsecureTcp: true, ...uniqueNetworkOptions() })
    engines.push(e)
    const r = await tcpRequest({ port: tcpPort(e), method: 'GET', path: '/_ping', headers: { Host: `127.0.0.1:${tcpPort(e)}` } })
    assert.equal(r.status, 200)
  })

  await t.test('a plain loopback listener refuses what a web page can send', async () => {
    const sock = join(dir, 'plain.sock')
    const e = await createEngine({ dataRoot: join(dir, 'plain'), hosts: [`unix://${sock}`, 'tcp://127.0.0.1:0'], ...uniqueNetworkOptions() })
    engines.push(e)
    const port = tcpPort(e)
    const own = `127.0.0.1:${port}`
    assert.equal((await tcpRequest({ port, method: 'GET', path: '/_ping', headers: { Host: own } })).status, 200)
    assert.equal((await tcpRequest({ port, method: 'GET', path: '/_ping', headers: { Host: `localhost:${port}` } })).status, 200)
    // DNS rebinding: the page's own name in Host
    const rebound = await tcpRequest({ port, method: 'GET', path: '/containers/json', headers: { Host: `evil.example:${port}` } })
    assert.equal(rebound.status, 403)
    assert.match(JSON.parse(rebound.text).message, /does not name this daemon/)
    // a cross-origin form post or text/plain body: refused on Origin, before any route runs
    const form = await tcpRequest({ port, method: 'POST', path: '/containers/prune', headers: { Host: own, Origin: 'http://evil.example', 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'a=b' })
    assert.equal(form.status, 403)
    assert.match(JSON.parse(form.text).message, /cross-origin requests are not allowed/)
    const plain = await tcpRequest({ port, method: 'POST', path: '/images/create?fromSrc=-&repo=busybox', headers: { Host: own, Origin: 'null', 'Content-Type': 'text/plain' }, body: 'x' })
    assert.equal(plain.status, 403)
    const preflight = await tcpRequest({ port, method: 'OPTIONS', path: '/containers/json', headers: { Host: own, Origin: 'http://evil.example', 'Access-Control-Request-Method': 'DELETE' } })
    assert.equal(preflight.status, 403)
    // OPTIONS is no blanket 200: unknown paths are 404
    assert.equal((await tcpRequest({ port, method: 'OPTIONS', path: '/no/such/thing', headers: { Host: own } })).status, 404)
    // a JSON body must say it is JSON
    const text = await tcpRequest({ port, method: 'POST', path: '/containers/create', headers: { Host: own, 'Content-Type': 'text/plain' }, body: '{"Image":"busybox"}' })
    assert.equal(text.status, 400)
    assert.match(JSON.parse(text.text).message, /unsupported Content-Type/)
    // the Unix socket is not subject to any of it (a browser cannot reach it)
    assert.equal((await request(sock, 'GET', '/_ping', { headers: { Origin: 'http://x' } })).status, 200)
  })

  await t.test('mutual TLS: the docker CLI with DOCKER_TLS_VERIFY and DOCKER_CERT_PATH; no certificate, no connection', { skip: hasDockerCli() ? false : 'the docker CLI is not installed' }, async () => {
    const certs = makeCerts(tmpDirIn(dir, 'certs'))
    const e = await createEngine({
      dataRoot: join(dir, 'tls'),
      hosts: [`unix://${join(dir, 'tls.sock')}`, 'tcp://127.0.0.1:0'],
      tls: { cert: certs.serverCert, key: certs.serverKey, ca: certs.ca, verify: true },
      ...uniqueNetworkOptions()
    })
    engines.push(e)
    const port = tcpPort(e)
    const host = `tcp://127.0.0.1:${port}`
    const ok = await docker({ DOCKER_HOST: host, DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: certs.clientDir }, ['version', '--format', '{{.Server.APIVersion}}'])
    assert.equal(ok.status, 0, ok.stderr)
    assert.equal(ok.stdout.trim(), '1.50')
    const info = await docker({ DOCKER_HOST: host, DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: certs.clientDir }, ['info', '--format', '{{.Containers}}'])
    assert.equal(info.status, 0, info.stderr)
    // plain HTTP to the TLS port gets nothing useful
    const plain = await docker({ DOCKER_HOST: host }, ['version', '--format', '{{.Server.APIVersion}}'])
    assert.notEqual(plain.status, 0)
    // TLS without a client certificate: the handshake is refused
    await assert.rejects(tcpRequest({ port, method: 'GET', path: '/_ping', tls: { ca: readFileSync(certs.ca) } }))
    // with one: in, but Host and Origin are still checked
    const client = { ca: readFileSync(certs.ca), cert: readFileSync(join(certs.clientDir, 'cert.pem')), key: readFileSync(join(certs.clientDir, 'key.pem')) }
    assert.equal((await tcpRequest({ port, method: 'GET', path: '/_ping', tls: client })).status, 200)
    assert.equal((await tcpRequest({ port, method: 'GET', path: '/_ping', headers: { Host: `evil.example:${port}` }, tls: { ...client, servername: 'localhost' } })).status, 403)
    assert.equal((await tcpRequest({ port, method: 'GET', path: '/_ping', headers: { Origin: 'https://evil.example' }, tls: client })).status, 403)
  })
})

function tmpDirIn (parent: string, name: string): string {
  const d = join(parent, name)
  spawnSync('mkdir', ['-p', d])
  return d
}
