// The Date header and the UTC times the daemon writes come without V8's time-zone lookup (lib/util/time.ts: Date's
// toISOString/toUTCString initialise ICU's time-zone support, ~1 MiB of RSS): the same text as Date's own methods,
// and a server process that answered a request and logged a line never opened /etc/localtime.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createHttpServer } from '../../lib/http/listen.js'
import { httpDate, isoSeconds, isoTime, rfc3339Nano } from '../../lib/util/time.js'

test('isoTime, isoSeconds and httpDate write what toISOString and toUTCString write', () => {
  const times = [0, -1, 1, 999, 1000, 951_782_400_000 /* 2000-02-29 */, 4_107_542_399_999, 253_402_300_799_999 /* 9999-12-31 */, -62_167_219_200_000 /* year 0 */, 1.7, -1.5]
  let seed = 7
  for (let i = 0; i < 2000; i++) { seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31; times.push(Math.floor((seed / 2 ** 31) * 4_102_444_800_000)) }
  for (const ms of times) {
    const d = new Date(ms)
    assert.equal(isoTime(ms), d.toISOString(), String(ms))
    assert.equal(isoSeconds(ms), d.toISOString().replace(/\.\d{3}Z$/, 'Z'), String(ms))
    assert.equal(httpDate(ms), d.toUTCString(), String(ms))
  }
  // outside 0-9999 and invalid: as Date writes them (or throws)
  assert.equal(isoTime(253_402_300_800_000), new Date(253_402_300_800_000).toISOString())
  assert.equal(httpDate(-62_167_219_200_001), new Date(-62_167_219_200_001).toUTCString())
  assert.throws(() => isoTime(NaN), RangeError)
  assert.equal(rfc3339Nano(1_700_000_000_123_456_000n), '2023-11-14T22:13:20.123456Z')
  assert.equal(rfc3339Nano(1_700_000_000_000_000_000n), '2023-11-14T22:13:20Z')
})

test('replies carry one Date header in HTTP date form, also when a handler set its own or wrote no head', async () => {
  const server = createHttpServer()
  server.on('request', (req, res) => {
    if (req.url === '/own') { res.setHeader('Date', 'Thu, 01 Jan 1970 00:00:00 GMT'); res.end('x'); return }
    if (req.url === '/implicit') { res.end('x'); return }
    if (req.url === '/array') { res.writeHead(200, ['Content-Length', '1']); res.end('x'); return }
    res.writeHead(200, 'Fine', { 'Content-Length': 1 })
    res.end('x')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  try {
    for (const path of ['/head', '/implicit', '/array', '/own']) {
      const raw = await new Promise<string[]>((resolve, reject) => {
        http.get({ host: '127.0.0.1', port, path }, (res) => { res.resume(); resolve(res.rawHeaders) }).on('error', reject)
      })
      const dates = raw.filter((_v, i) => i % 2 === 0 && raw[i]?.toLowerCase() === 'date').length
      const date = raw[raw.findIndex((v, i) => i % 2 === 0 && v.toLowerCase() === 'date') + 1] ?? ''
      assert.equal(dates, 1, `${path}: ${raw.join(' ')}`)
      if (path === '/own') { assert.equal(date, 'Thu, 01 Jan 1970 00:00:00 GMT'); continue }
      assert.match(date, /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/, path)
      assert.ok(Math.abs(Date.parse(date) - Date.now()) < 5000, `${path}: ${date}`)
    }
  } finally {
    await new Promise((resolve) => server.close(resolve))
  }
})

test('a server that answered a request and wrote log lines never looked up the local time zone', (t) => {
  if (spawnSync('strace', ['-V']).status !== 0) { t.skip('strace is not installed (tools/install-deps.sh installs it)'); return }
  const dir = mkdtempSync(join(tmpdir(), 'berth-tz-'))
  try {
    const lib = (p: string): string => fileURLToPath(new URL(`../../lib/${p}`, import.meta.url))
    const script = `
      const { createHttpServer } = await import(${JSON.stringify(lib('http/listen.js'))})
      const { formatRecord } = await import(${JSON.stringify(lib('cli/output.js'))})
      const { rfc3339Nano, nowNs } = await import(${JSON.stringify(lib('util/time.js'))})
      const http = await import('node:http')
      const s = createHttpServer()
      s.on('request', (q, r) => { r.writeHead(200, { 'Content-Length': 2 }); r.end('ok') })
      s.listen(0, '127.0.0.1', () => {
        http.get({ host: '127.0.0.1', port: s.address().port, path: '/', agent: false }, (res) => {
          res.resume()
          res.on('end', () => {
            process.stdout.write(formatRecord('text', 'info', '', 'hi', new Date()) + ' ' + formatRecord('json', 'info', '', 'hi', new Date()) + ' ' + rfc3339Nano(nowNs()) + '\\n')
            s.close()
          })
        })
      })`
    const trace = join(dir, 'trace')
    const r = spawnSync('strace', ['-f', '-e', 'trace=open,openat,readlink,stat,newfstatat', '-o', trace, process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 })
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, /time="\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z" level=info/)
    const tz = readFileSync(trace, 'utf8').split('\n').filter((l) => /localtime|zoneinfo/.test(l))
    assert.deepEqual(tz, [])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
