// evhttp's Date header without V8's time-zone lookup: the same text as Date's toUTCString, and an embedding process
// whose server answered a request never opened /etc/localtime (toUTCString would load ICU's zone data, ~1 MiB).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { rfc1123 } from '../../lib/evhttp/http-date.js'

test('rfc1123 writes what toUTCString writes', () => {
  const times = [0, 999, 1000, 951_782_400_000 /* 2000-02-29 */, 4_107_542_399_999, 253_402_300_799_999 /* 9999-12-31 */]
  let seed = 11
  for (let i = 0; i < 2000; i++) { seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31; times.push(Math.floor((seed / 2 ** 31) * 4_102_444_800_000)) }
  for (const ms of times) assert.equal(rfc1123(ms), new Date(ms).toUTCString(), String(ms))
})

test('a server that answered a request never looked up the local time zone', (t) => {
  if (spawnSync('strace', ['-V']).status !== 0) { t.skip('strace is not installed (tools/install-deps.sh installs it)'); return }
  const dir = mkdtempSync(join(tmpdir(), 'berth-evhttp-tz-'))
  try {
    const index = fileURLToPath(new URL('../../lib/evhttp/index.js', import.meta.url))
    const script = `
      const { EventBase, EventHttp } = await import(${JSON.stringify(index)})
      const net = await import('node:net')
      const base = new EventBase()
      const http = new EventHttp(base)
      http.setDefaultCallback((req) => { req.sendReply(200, 'OK') })
      if (!http.bind('127.0.0.1', 0)) throw new Error(String(http.lastError))
      const c = net.connect(http.getBoundAddresses()[0].port, '127.0.0.1', () => { c.end('GET / HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n') })
      let reply = ''
      c.setEncoding('latin1')
      c.on('data', (d) => { reply += d })
      c.on('close', () => { process.stdout.write(reply); base.free() })`
    const trace = join(dir, 'trace')
    const r = spawnSync('strace', ['-f', '-e', 'trace=open,openat,readlink,stat,newfstatat', '-o', trace, process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 })
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, /^HTTP\/1\.1 200 OK\r\n/)
    const date = /\r\nDate: ([^\r]+)\r\n/.exec(r.stdout)?.[1] ?? ''
    assert.match(date, /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/)
    assert.ok(Math.abs(Date.parse(date) - Date.now()) < 5000, date)
    const tz = readFileSync(trace, 'utf8').split('\n').filter((l) => /localtime|zoneinfo/.test(l))
    assert.deepEqual(tz, [])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
