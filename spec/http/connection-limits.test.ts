// Slow bodies and connection floods on the registry and Engine API listeners (lib/http/limits.ts): a body that stops
// moving gets a 408 and the connection closes, one that keeps moving slowly is never cut; connections are capped in
// all and per client address, with a 503/429 and Retry-After.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { randomBytes, createHash } from 'node:crypto'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { createEngine, type Engine } from '../../lib/index.js'
import { containerSkipReason, tmpDir, uniqueNetworkOptions } from '../helpers/engine.js'
import { useRegistry } from '../registry/helpers.js'

type Target = { port: number, host?: string, localAddress?: string } | { path: string }

function connect (to: Target): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = 'path' in to ? net.connect(to.path) : net.connect({ port: to.port, host: to.host ?? '127.0.0.1', ...(to.localAddress !== undefined ? { localAddress: to.localAddress } : {}) })
    s.once('connect', () => { s.off('error', reject); resolve(s) })
    s.once('error', reject)
  })
}

/** Everything the server sends until it closes the connection (or `ms` passes: then what came so far, flagged). */
function readToClose (s: net.Socket, ms: number): Promise<{ text: string, closed: boolean, after: number }> {
  const t0 = Date.now()
  return new Promise((resolve) => {
    let text = ''
    s.setEncoding('latin1')
    s.on('data', (d: string) => { text += d })
    s.on('error', () => {})
    const timer = setTimeout(() => { s.destroy(); resolve({ text, closed: false, after: Date.now() - t0 }) }, ms)
    s.once('close', () => { clearTimeout(timer); resolve({ text, closed: true, after: Date.now() - t0 }) })
  })
}

/** One keep-alive GET on an open socket; resolves with the status line. */
function getOn (s: net.Socket, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = ''
    const onData = (d: Buffer): void => {
      buf += d.toString('latin1')
      const end = buf.indexOf('\r\n\r\n')
      if (end === -1) return
      const len = Number(/content-length: (\d+)/i.exec(buf.slice(0, end))?.[1] ?? 0)
      if (buf.length < end + 4 + len) return
      s.off('data', onData)
      resolve(buf.slice(0, buf.indexOf('\r\n')))
    }
    s.on('data', onData)
    s.once('error', reject)
    s.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`)
  })
}

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }
const sha = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`

describe('registry listener limits', () => {
  const reg = useRegistry({ connectionLimits: { bodyIdleTimeout: 1000, maxConnections: 8, maxConnectionsPerClient: 4 } })
  let port = 0
  before(() => { port = reg.current.port })

  it('a body that stops moving: 408 and the connection closes (uploads and manifests)', async () => {
    for (const head of [
      'POST /v2/slow/x/blobs/uploads/?digest=sha256:' + '0'.repeat(64) + ' HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n',
      'PUT /v2/slow/x/manifests/latest HTTP/1.1\r\nHost: x\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nContent-Length: 100\r\n\r\n'
    ]) {
      const s = await connect({ port })
      s.write(head + '{"schemaVer')
      const r = await readToClose(s, 10_000)
      assert.ok(r.closed, `still open after ${r.after} ms: ${r.text}`)
      assert.match(r.text, /^HTTP\/1\.1 408 /, r.text)
      assert.match(r.text, /"errors"/)
    }
  })

  it('a slow body that keeps moving is not cut (a byte every 250 ms, 4 times the idle timeout in all)', async () => {
    const data = randomBytes(16)
    const s = await connect({ port })
    s.write(`POST /v2/slow/y/blobs/uploads/?digest=${sha(data)} HTTP/1.1\r\nHost: x\r\nContent-Length: ${data.length}\r\nConnection: close\r\n\r\n`)
    const reply = readToClose(s, 20_000)
    for (const b of data) { await sleep(250); s.write(Buffer.from([b])) }
    const r = await reply
    assert.match(r.text, /^HTTP\/1\.1 201 /, r.text)
  })

  it('connections are capped per client address (429) and in all (503), with Retry-After', async () => {
    const open: net.Socket[] = []
    try {
      for (let i = 0; i < 4; i++) {
        const s = await connect({ port, localAddress: '127.0.0.1' })
        open.push(s)
        assert.match(await getOn(s, '/v2/'), / 200 /)
      }
      const fifth = await readToClose(await connect({ port, localAddress: '127.0.0.1' }), 5000)
      assert.match(fifth.text, /^HTTP\/1\.1 429 [^]*Retry-After: 1/i, fifth.text)
      for (let i = 0; i < 4; i++) {
        const s = await connect({ port, localAddress: '127.0.0.2' })
        open.push(s)
        assert.match(await getOn(s, '/v2/'), / 200 /)
      }
      const ninth = await readToClose(await connect({ port, localAddress: '127.0.0.3' }), 5000)
      assert.match(ninth.text, /^HTTP\/1\.1 503 [^]*Retry-After: 1/i, ninth.text)
      // a closed connection frees its place
      const gone = open.shift() as net.Socket
      await new Promise<void>((resolve) => { gone.once('close', () => { resolve() }); gone.destroy() })
      await sleep(100)
      const again = await connect({ port, localAddress: '127.0.0.3' })
      open.push(again)
      assert.match(await getOn(again, '/v2/'), / 200 /)
    } finally {
      for (const s of open) s.destroy()
    }
  })
})

const SKIP = containerSkipReason()

describe('Engine API listener limits', { skip: SKIP ?? false }, () => {
  let engine: Engine
  let dir = ''
  let socket = ''
  let port = 0
  before(async () => {
    dir = tmpDir()
    socket = join(dir, 'b.sock')
    engine = await createEngine({
      dataRoot: join(dir, 'data'),
      execRoot: join(dir, 'run'),
      hosts: [`unix://${socket}`, 'tcp://127.0.0.1:0'],
      connectionLimits: { bodyIdleTimeout: 1000, maxConnections: 6, maxConnectionsPerClient: 3 },
      ...uniqueNetworkOptions()
    })
    const tcp = engine.api.addresses.find((a) => a.kind === 'tcp')
    assert.ok(tcp !== undefined && tcp.kind === 'tcp')
    port = tcp.port
  })
  after(async () => {
    await engine?.close()
    await engine?.network.purgeHost()
    rmSync(dir, { recursive: true, force: true })
  })

  it('a create body that stops moving: 408 {"message"} and the connection closes', async () => {
    const s = await connect({ path: socket })
    s.write('POST /containers/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60\r\n\r\n{"Image":')
    const r = await readToClose(s, 10_000)
    assert.ok(r.closed, `still open after ${r.after} ms: ${r.text}`)
    assert.match(r.text, /^HTTP\/1\.1 408 [^]*"message"/, r.text)
  })

  it('TCP connections are capped per client; the Unix socket counts toward the total only', async () => {
    const open: net.Socket[] = []
    try {
      for (let i = 0; i < 3; i++) {
        const s = await connect({ port })
        open.push(s)
        assert.match(await getOn(s, '/_ping'), / 200 /)
      }
      assert.match((await readToClose(await connect({ port }), 5000)).text, /^HTTP\/1\.1 429 /)
      for (let i = 0; i < 3; i++) {
        const s = await connect({ path: socket })
        open.push(s)
        assert.match(await getOn(s, '/_ping'), / 200 /)
      }
      assert.match((await readToClose(await connect({ path: socket }), 5000)).text, /^HTTP\/1\.1 503 /)
    } finally {
      for (const s of open) s.destroy()
    }
  })
})
