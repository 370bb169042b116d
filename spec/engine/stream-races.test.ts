// Many hijacked and streaming connections on one container at once, against one daemon process, cut at every moment
// (the whole connection closed, or only the client's side half-closed as the docker CLI does at its stdin's EOF)
// while the container starts, runs, stops, restarts and goes: every reply is a documented status (never a 5xx,
// never a hang), the process stays alive, and once things settle it holds no more descriptors than before, no exec
// of a removed container, and no monitor process of a removed container.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { join } from 'node:path'
import { containerSkipReason } from '../helpers/engine.js'
import { daemonProcessOfFile } from '../helpers/daemon-process.js'
import { until } from '../helpers/poll.js'

const skip = containerSkipReason()
if (skip !== null) process.stdout.write(`# skipping stream-race tests: ${skip}\n`)

const daemon = daemonProcessOfFile(skip, { errorsCarryMessage: true })
const { call, assertAlive } = daemon

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

interface Stream { status: number, head: string, bytes: number, closed: boolean }

/**
 * A raw connection: sends `head` (+ `body`), then after `cutAfter` ms either half-closes its side ('end'), closes
 * the whole connection ('destroy'), or keeps reading until the daemon closes ('wait'). Resolves once closed, within
 * `limit` ms (else it rejects: a hang).
 */
async function stream (head: string, opts: { body?: string, input?: string, cutAfter: number, cut: 'end' | 'destroy' | 'wait', limit?: number }): Promise<Stream> {
  const limit = opts.limit ?? 30_000
  return await new Promise((resolve, reject) => {
    const s = net.connect(daemon.sock)
    const chunks: Buffer[] = []
    let bytes = 0
    let done = false
    const finish = (): void => {
      if (done) return
      done = true
      clearTimeout(hang)
      clearTimeout(cut)
      s.destroy()
      const got = Buffer.concat(chunks).toString('latin1')
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(got)
      resolve({ status: m === null ? 0 : Number(m[1]), head: got.slice(0, 600), bytes, closed: true })
    }
    const hang = setTimeout(() => {
      done = true
      s.destroy()
      reject(new Error(`${head.split('\r\n')[0] ?? ''}: not closed within ${limit} ms; got ${Buffer.concat(chunks).toString('latin1').slice(0, 300)}`))
    }, limit)
    const cut = setTimeout(() => {
      if (opts.cut === 'destroy') finish()
      else if (opts.cut === 'end') s.end()
    }, opts.cutAfter)
    s.on('error', finish)
    s.on('close', finish)
    s.on('connect', () => {
      s.write(head + (opts.body ?? ''))
      if (opts.input !== undefined) s.write(opts.input)
    })
    s.on('data', (d: Buffer) => { bytes += d.length; if (chunks.length < 4) chunks.push(d) })
  })
}

const upgrade = 'Connection: Upgrade\r\nUpgrade: tcp\r\n'
const post = (path: string, body = '', extra = ''): string =>
  `POST ${path} HTTP/1.1\r\nHost: berth\r\n${extra === '' ? 'Connection: close\r\n' : extra}${body === '' ? '' : 'Content-Type: application/json\r\n'}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
const get = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: berth\r\nConnection: close\r\n\r\n`

function assertDocumented (r: Stream, allowed: number[], what: string): void {
  assert.ok(r.status === 0 || allowed.includes(r.status), `${what}: ${r.status} ${r.head} (daemon: ${daemon.stderr.slice(-1500)})`)
  if (r.status >= 400) assert.match(r.head, /"message":"[^"]+"/, what)
}

/** The daemon's open descriptors, less its connection to a prepared monitor (one waits for the next start). */
function daemonFds (): number { return readdirSync(`/proc/${daemon.child.pid ?? 0}/fd`).length - monitors(true).length }

/** Monitor processes (berth-shim) of this daemon: those of containers, or (`prepared`) those waiting for a start. */
function monitors (prepared = false): number[] {
  const out: number[] = []
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue
    let cmd = ''
    try { cmd = readFileSync(`/proc/${p}/cmdline`, 'latin1') } catch { continue }
    if (!cmd.includes('berth-shim') || !cmd.includes(daemon.dir) || cmd.includes('\0lock\0')) continue
    if (cmd.includes('\0--prepared\0') !== prepared) continue
    // a monitor that exited and waits for its parent (init, here) to reap it holds nothing of the daemon's
    let state = ''
    try { state = readFileSync(`/proc/${p}/stat`, 'latin1').replace(/^.*\) /s, '')[0] ?? '' } catch { continue }
    if (state !== 'Z') out.push(Number(p))
  }
  return out
}

function fdList (): string[] {
  const base = `/proc/${daemon.child.pid ?? 0}/fd`
  return readdirSync(base).map((f) => { try { return readlinkSync(join(base, f)) } catch { return '?' } })
}

/** What the descriptors opened since `before` are (a unix socket: its path, if it has one). */
function newFds (before: string[]): string {
  const unix = readFileSync(`/proc/${daemon.child.pid ?? 0}/net/unix`, 'latin1').split('\n')
  return fdList().filter((f) => !before.includes(f)).map((f) => {
    const inode = /^socket:\[(\d+)\]$/.exec(f)?.[1]
    const line = inode === undefined ? undefined : unix.find((l) => l.split(/\s+/)[6] === inode)
    return line === undefined ? f : `${f}(${line.trim()})`
  }).join(' ')
}

async function assertSettled (what: string, fdsBefore: number | null, listBefore: string[]): Promise<void> {
  await assertAlive(what)
  await until(`${what}: no monitor process left (${monitors().join(' ')})`, async () => monitors().length === 0, 20_000)
  if (fdsBefore === null) return
  await until(`${what}: the daemon's descriptors back to ${fdsBefore} (now ${daemonFds()}, new: ${newFds(listBefore)})`, async () => daemonFds() <= fdsBefore, 20_000)
}

const pick = <T>(xs: T[], i: number): T => xs[i % xs.length] as T

test('attaches of every kind on one container while it starts, restarts, stops and goes', { skip: skip ?? false, timeout: 90_000 }, async () => {
  await call('GET', '/containers/json')
  const fds = daemonFds()
  const fdsList = fdList()
  for (let round = 0; round < 3; round++) {
    const tty = round === 1
    const created = await call('POST', '/containers/create', {
      Image: 'busybox', Cmd: ['sh', '-c', 'while true; do echo tick; read -t 0.05 x && echo got $x; done'], Tty: tty, OpenStdin: true, AttachStdin: true, AttachStdout: true, AttachStderr: true
    })
    const id = (created.json() as { Id: string }).Id
    const attaches: Array<Promise<void>> = []
    for (let i = 0; i < 14; i++) {
      const q = pick(['stream=1&stdin=1&stdout=1&stderr=1', 'stream=1&stdout=1', 'stream=1&logs=1&stdout=1&stderr=1', 'stream=1&stdin=1&stdout=1&detachKeys=ctrl-x,x', 'logs=1&stdout=1'], i + round)
      const cut = pick<'end' | 'destroy' | 'wait'>(['end', 'destroy', 'wait'], i)
      const input = i % 3 !== 0 ? undefined : i % 2 === 0 ? 'hello\n\x18x' : 'hello\n'
      attaches.push((async () => {
        await sleep((i * 97) % 900)
        const r = await stream(post(`/containers/${id}/attach?${q}`, '', i % 3 === 0 ? upgrade : ''), { input, cutAfter: (i * 211) % 1500, cut })
        assertDocumented(r, [101, 200, 404, 409], `attach ${q} cut ${cut}`)
      })())
    }
    const lifecycle = (async () => {
      await call('POST', `/containers/${id}/start`)
      await sleep(200)
      await call('POST', `/containers/${id}/restart?t=0`)
      await sleep(150)
      await call('POST', `/containers/${id}/stop?t=0`)
      await call('POST', `/containers/${id}/start`)
      await sleep(round * 300)
      await call('DELETE', `/containers/${id}?force=1`)
    })()
    await Promise.all([lifecycle, ...attaches])
  }
  await assertSettled('attaches', fds, fdsList)
})

test('execs of every kind on one container while it stops or goes; inspect and resize meanwhile', { skip: skip ?? false, timeout: 90_000 }, async () => {
  const fds = daemonFds()
  const fdsList = fdList()
  const execIds: string[] = []
  for (let round = 0; round < 3; round++) {
    const created = await call('POST', '/containers/create', { Image: 'busybox', Cmd: ['sleep', '1000'] })
    const id = (created.json() as { Id: string }).Id
    await call('POST', `/containers/${id}/start`)
    const jobs: Array<Promise<void>> = []
    for (let i = 0; i < 12; i++) {
      jobs.push((async () => {
        await sleep((i * 53) % 600)
        const tty = i % 3 === 1
        const detach = i % 4 === 2
        const c = await call('POST', `/containers/${id}/exec`, { Cmd: ['sh', '-c', 'while true; do echo x; sleep 0.02; done'], AttachStdin: !detach, AttachStdout: !detach, AttachStderr: !detach, Tty: tty })
        if (c.status !== 201) { assert.ok([404, 409].includes(c.status), `exec create ${c.status} ${c.text}`); return }
        const eid = (c.json() as { Id: string }).Id
        execIds.push(eid)
        const body = JSON.stringify({ Detach: detach, Tty: tty })
        const started = stream(post(`/exec/${eid}/start`, body, i % 2 === 0 ? upgrade : ''), { input: detach || i % 2 !== 0 ? undefined : 'in\n', cutAfter: (i * 173) % 1200, cut: pick(['end', 'destroy', 'wait'], i) })
        await sleep(50)
        const ins = await call('GET', `/exec/${eid}/json`)
        assert.ok([200, 404].includes(ins.status), `exec inspect ${ins.status} ${ins.text}`)
        const rs = await call('POST', `/exec/${eid}/resize?h=30&w=100`)
        assert.ok([200, 201, 404, 409].includes(rs.status), `exec resize ${rs.status} ${rs.text}`)
        assertDocumented(await started, [101, 200, 204, 404, 409], `exec start ${body}`)
      })())
    }
    jobs.push((async () => {
      await sleep(300 + round * 200)
      if (round === 1) await call('POST', `/containers/${id}/stop?t=1`)
      if (round === 2) await call('POST', `/containers/${id}/kill`)
      await call('DELETE', `/containers/${id}?force=1`)
    })())
    await Promise.all(jobs)
  }
  for (const eid of execIds) {
    const r = await call('GET', `/exec/${eid}/json`)
    assert.equal(r.status, 404, `exec ${eid} of a removed container: ${r.status} ${r.text}`)
  }
  await assertSettled('execs', fds, fdsList)
})

test('logs, stats and events streams while containers come and go; clients leaving mid-stream', { skip: skip ?? false, timeout: 90_000 }, async () => {
  const fds = daemonFds()
  const fdsList = fdList()
  const since = Math.floor(Date.now() / 1000) - 1
  for (let round = 0; round < 3; round++) {
    const ids: string[] = []
    for (let k = 0; k < 3; k++) {
      const c = await call('POST', '/containers/create', { Image: 'busybox', Cmd: ['sh', '-c', 'i=0; while [ $i -lt 2000 ]; do echo line $i; i=$((i+1)); sleep 0.002; done'], Tty: k === 1 })
      ids.push((c.json() as { Id: string }).Id)
    }
    const jobs: Array<Promise<void>> = []
    for (let i = 0; i < 15; i++) {
      const id = pick(ids, i)
      const path = pick([
        `/containers/${id}/logs?follow=1&stdout=1&stderr=1&timestamps=1&tail=5`,
        `/containers/${id}/logs?follow=1&stdout=1&since=${since}&until=${since + 3600}`,
        `/containers/${id}/logs?follow=1&stdout=1&tail=all`,
        `/containers/${id}/stats?stream=1`,
        `/containers/${id}/stats?stream=0`,
        `/events?since=${since}&filters=${encodeURIComponent(JSON.stringify({ container: [id], type: ['container'] }))}`,
        `/events?until=${Math.floor(Date.now() / 1000) + 3}`
      ], i + round)
      jobs.push((async () => {
        await sleep((i * 71) % 700)
        const r = await stream(get(path), { cutAfter: (i * 137) % 2000, cut: path.startsWith('/events?since') ? 'destroy' : pick(['end', 'destroy', 'wait'], i) })
        assertDocumented(r, [200, 404, 409], `GET ${path}`)
      })())
    }
    jobs.push((async () => {
      for (const id of ids) await call('POST', `/containers/${id}/start`)
      await sleep(400)
      await call('POST', `/containers/${ids[0] ?? ''}/restart?t=0`)
      await call('POST', `/containers/${ids[1] ?? ''}/stop?t=0`)
      await sleep(300)
      for (const id of ids) await call('DELETE', `/containers/${id}?force=1`)
    })())
    await Promise.all(jobs)
  }
  await assertSettled('logs/stats/events', fds, fdsList)
})

test('attaches and execs whose stdin the container stopped reading, when it is killed: their connections close', { skip: skip ?? false, timeout: 60_000 }, async () => {
  // the stdin pump paused the client's input for a drain that never came: the daemon ended its output at the exit
  // but never read its client's close, and kept the connection (and its descriptor) for good
  const created = await call('POST', '/containers/create', { Image: 'busybox', Cmd: ['sleep', '1000'], OpenStdin: true })
  const id = (created.json() as { Id: string }).Id
  await call('POST', `/containers/${id}/start`)
  const fds = daemonFds()
  const fdsList = fdList()
  const lots = Buffer.alloc(2 << 20, 97).toString('latin1')
  const streams: Array<Promise<Stream>> = []
  for (let i = 0; i < 4; i++) {
    const c = await call('POST', `/containers/${id}/exec`, { Cmd: ['sleep', '1000'], AttachStdin: true, AttachStdout: true })
    const eid = (c.json() as { Id: string }).Id
    streams.push(stream(post(`/exec/${eid}/start`, '{}', upgrade), { input: lots, cutAfter: 60_000, cut: 'destroy' }))
    streams.push(stream(post(`/containers/${id}/attach?stream=1&stdin=1&stdout=1`, '', upgrade), { input: lots, cutAfter: 60_000, cut: 'destroy' }))
  }
  await sleep(1000)
  await call('POST', `/containers/${id}/kill`)
  for (const r of await Promise.all(streams)) assertDocumented(r, [101], 'exec start / attach')
  await assertSettled('stdin not read', fds, fdsList)
  await call('DELETE', `/containers/${id}?force=1`)
})
