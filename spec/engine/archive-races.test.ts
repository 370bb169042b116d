// `docker cp` (archive HEAD/GET/PUT) and `docker export` while the container stops, starts, restarts, is killed or
// removed, against one daemon process, as dockerd 20.10 does it (moby's daemon/archive.go and export.go, checked
// against dockerd itself):
// - a copy in or out holds the container's lock: a stop, start, restart or rm -f asked meanwhile waits for the copy's
//   end (a GET's: its tar stream's end, or its client going away), and the copy is whole; a kill does not wait (as a
//   kill during a stop's grace period must not), the copy goes on whole in the tree the exit detached. Before, a PUT whose
//   container was stopped and started again mid-copy failed 409 "stopped or restarted during the copy", and a rm -f
//   answered at once while a GET still read the container's files, which went 30 s later under it;
// - an export holds only the tree it reads: a stop, start or rm -f goes ahead at once, the export goes on to a whole
//   tar, and a removed container's files go once it ends. Before, they went 30 s after the rm -f, under a slow export;
// - an --rm container that exits during a copy or an export keeps its trees for them, and goes after them. Before, its
//   monitor removed them at the exit: the copy failed 409 (ENOENT), the export lost files;
// - with all of these at once (and commit, rename, changes, copies cut by their client), in bounded rounds, on plain,
//   --restart always and --rm containers: no 5xx, no hang, the daemon alive, every copy that answered 200 whole, and
//   nothing of a removed container left (directory, mount). Before, a start or restart of an --rm container whose
//   run had just ended failed 400 "mount overlay …: No such file or directory" (it is dockerd's 409 "marked for
//   removal" now), and a copy out of it answered 404 "Could not find the file" from an empty tree mounted anew.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import Docker from 'dockerode'
import { containerSkipReason, createContainer, dockerCli, hasDockerCli, type Reply } from '../helpers/engine.js'
import { daemonProcessOfFile } from '../helpers/daemon-process.js'
import { until } from '../helpers/poll.js'
import { listTar, makeTar } from '../helpers/tar.js'

const skip = containerSkipReason()
if (skip !== null) process.stdout.write(`# skipping archive-race tests: ${skip}\n`)

const daemon = daemonProcessOfFile(skip)
const { call, assertAlive } = daemon

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

/** `n` bytes that differ from one offset to the next (a shifted or cut copy does not compare equal). */
function pattern (n: number, seed: number): Buffer {
  const b = Buffer.alloc(n)
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed + (i >> 9)) & 0xff
  return b
}

/** A call and the moment it was answered. */
async function timed (p: Promise<Reply>): Promise<{ r: Reply, at: number }> {
  const r = await p
  return { r, at: Date.now() }
}

/** Whether a promise has settled by now. */
function tracked<T> (p: Promise<T>): { p: Promise<T>, done: () => boolean } {
  let settled = false
  void p.then(() => { settled = true }, () => { settled = true })
  return { p, done: () => settled }
}

/** PUT archive with a body sent slowly: `tar` in `chunks` pieces, one every `every` ms (`sentAt`: its last piece sent). */
async function slowPut (id: string, path: string, tar: Buffer, chunks: number, every: number): Promise<{ status: number, text: string, sentAt: number }> {
  let sentAt = 0
  return await new Promise((resolve, reject) => {
    const req = http.request({ socketPath: daemon.sock, method: 'PUT', path: `/containers/${id}/archive?path=${path}`, headers: { 'Content-Type': 'application/x-tar', 'Content-Length': tar.length } }, (res) => {
      const got: Buffer[] = []
      res.on('data', (d: Buffer) => got.push(d))
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, text: Buffer.concat(got).toString(), sentAt }) })
      res.on('error', reject)
    })
    req.on('error', reject)
    void (async () => {
      const size = Math.ceil(tar.length / chunks)
      for (let off = 0; off < tar.length; off += size) {
        if (off + size >= tar.length) sentAt = Date.now()
        req.write(tar.subarray(off, off + size))
        await sleep(every)
      }
      req.end()
    })()
  })
}

/** A GET whose answer is read only when asked to (`read`: slowly, `every` ms between chunks of at most 64 KiB). */
async function heldGet (path: string): Promise<{ status: number, read: (every?: number, progress?: (n: number) => void) => Promise<Buffer>, cut: () => void }> {
  return await new Promise((resolve, reject) => {
    const req = http.request({ socketPath: daemon.sock, method: 'GET', path }, (res) => {
      res.pause()
      resolve({
        status: res.statusCode ?? 0,
        cut: () => { req.destroy() },
        read: async (every = 0, progress) => {
          const got: Buffer[] = []
          let n = 0
          for await (const c of res as AsyncIterable<Buffer>) {
            for (let off = 0; off < c.length; off += 65536) {
              got.push(c.subarray(off, off + 65536))
              n += Math.min(65536, c.length - off)
              progress?.(n)
              if (every > 0) await sleep(every)
            }
          }
          if (!res.complete) throw new Error(`${path}: the answer was cut after ${n} bytes`)
          return Buffer.concat(got)
        }
      })
    })
    req.on('error', reject)
    req.end()
  })
}

async function fileIn (tar: Buffer, name: string): Promise<Buffer | undefined> {
  return (await listTar(tar)).find((e) => e.name === name)?.body
}

async function running (id: string): Promise<boolean> {
  return ((await call('GET', `/containers/${id}/json`)).json() as { State: { Running: boolean } }).State.Running
}

/** A container with `size` bytes of pattern(seed) at /<dir>/data (written by a copy, as a user's file). */
async function withBigFile (size: number, seed: number, start: boolean, dir = 'big', hostConfig: Record<string, unknown> = {}): Promise<{ id: string, data: Buffer }> {
  const id = await createContainer(daemon.sock, { Image: 'busybox', Cmd: ['sleep', '600'], StopTimeout: 1, HostConfig: hostConfig })
  const data = pattern(size, seed)
  const put = await call('PUT', `/containers/${id}/archive?path=/`, makeTar([{ name: dir, type: 'dir' }, { name: `${dir}/data`, body: data }]))
  assert.equal(put.status, 200, put.text)
  if (start) assert.equal((await call('POST', `/containers/${id}/start`)).status, 204)
  return { id, data }
}

/** The daemon's overlay mounts and container directories of these containers. */
function leftOf (ids: string[]): string[] {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => ids.some((id) => l.includes(id)))
  const dirs = readdirSync(join(daemon.dir, 'data', 'containers')).filter((n) => ids.includes(n))
  return [...mounts, ...dirs]
}

async function assertNothingLeft (what: string, ids: string[]): Promise<void> {
  await until(`${what}: nothing left of the removed containers (${leftOf(ids).join(', ')})`, async () => leftOf(ids).length === 0, 20_000)
}

test('docker cp into a running container stopped and started again mid-copy: the stop waits for the copy, which is whole (dockerd)', { skip: skip ?? false, timeout: 60_000 }, async () => {
  const id = await createContainer(daemon.sock, { Image: 'busybox', Cmd: ['sleep', '600'], StopTimeout: 1 })
  assert.equal((await call('POST', `/containers/${id}/start`)).status, 204)
  // many files in new directories: each made by the copy as it comes (the writable layer's work directory in use)
  const files = Array.from({ length: 48 }, (_, i) => ({ name: `in/d${i % 8}/f${i}`, body: pattern(64 * 1024, i) }))
  const tar = makeTar([{ name: 'in', type: 'dir' }, ...Array.from({ length: 8 }, (_, d) => ({ name: `in/d${d}`, type: 'dir' as const })), ...files])
  const put = slowPut(id, '/tmp', tar, 40, 80)
  await sleep(300)
  const stop = await timed(call('POST', `/containers/${id}/stop?t=1`))
  const start = await timed(call('POST', `/containers/${id}/start`))
  const copied = await put
  // before: 409 "Container … stopped or restarted during the copy"
  assert.equal(copied.status, 200, copied.text)
  assert.equal(stop.r.status, 204, stop.r.text)
  assert.equal(start.r.status, 204, start.r.text)
  // (a copy cannot end before its last byte came)
  assert.ok(copied.sentAt > 0 && stop.at >= copied.sentAt, `the stop answered ${copied.sentAt - stop.at} ms before the copy it should have waited for had its last byte`)
  assert.ok(await running(id))
  const back = await call('GET', `/containers/${id}/archive?path=/tmp/in`)
  assert.equal(back.status, 200)
  const listed = await listTar(back.body)
  for (const f of files) assert.ok(listed.find((e) => e.name === f.name)?.body.equals(f.body), `${f.name} is whole`)
  assert.equal((await call('DELETE', `/containers/${id}?force=1`)).status, 204)
  await assertNothingLeft('after the copy', [id])
  await assertAlive('after the copy')
})

test('docker cp into a stopped container started mid-copy, and into one restarted or killed mid-copy (dockerode putArchive, docker cp -)', { skip: skip ?? false, timeout: 90_000 }, async () => {
  const docker = new Docker({ socketPath: daemon.sock })
  const ids: string[] = []
  for (const [i, op] of (['start', 'restart?t=0', 'kill'] as const).entries()) {
    const id = await createContainer(daemon.sock, { Image: 'busybox', Cmd: ['sleep', '600'], StopTimeout: 1 })
    ids.push(id)
    if (op !== 'start') assert.equal((await call('POST', `/containers/${id}/start`)).status, 204)
    const data = pattern(2 * 1024 * 1024, 10 + i)
    const tar = makeTar([{ name: `in${i}.bin`, body: data }])
    // dockerode's putArchive with a stream that comes slowly
    let sentAt = 0
    const body = Readable.from((async function * () {
      for (let off = 0; off < tar.length; off += 131072) {
        if (off + 131072 >= tar.length) sentAt = Date.now()
        yield tar.subarray(off, off + 131072)
        await sleep(50)
      }
    })())
    const copy = docker.getContainer(id).putArchive(body, { path: '/tmp' }) as Promise<unknown>
    await sleep(250)
    const lifecycle = await timed(call('POST', `/containers/${id}/${op}`))
    // (a kill does not wait: the copy goes on in the tree the exit detached)
    if (op !== 'kill') assert.ok(sentAt > 0 && lifecycle.at >= sentAt, `${op} answered before the copy it should have waited for had its last byte`)
    await copy
    assert.equal(lifecycle.r.status, 204, lifecycle.r.text)
    const back = await call('GET', `/containers/${id}/archive?path=/tmp/in${i}.bin`)
    assert.ok((await fileIn(back.body, `in${i}.bin`))?.equals(data), `${op}: the copied file is whole`)
  }
  if (hasDockerCli()) {
    // the docker CLI's `docker cp - ctr:/dir` streams a tar from its stdin: a restart asked mid-copy waits for it
    const id = ids[0] as string
    const data = pattern(4 * 1024 * 1024, 20)
    const cp = tracked(dockerCli(daemon.sock, ['cp', '-', `${id}:/tmp`], makeTar([{ name: 'cli.bin', body: data }])))
    await sleep(30)
    const restarted = await call('POST', `/containers/${id}/restart?t=0`)
    assert.equal(restarted.status, 204, restarted.text)
    const done = await cp.p
    assert.equal(done.status, 0, done.stderr)
    const back = await call('GET', `/containers/${id}/archive?path=/tmp/cli.bin`)
    assert.ok((await fileIn(back.body, 'cli.bin'))?.equals(data), 'docker cp: the copied file is whole')
  } else process.stdout.write('# docker cp - skipped: the docker CLI is not installed\n')
  for (const id of ids) assert.equal((await call('DELETE', `/containers/${id}?force=1`)).status, 204)
  await assertNothingLeft('after the copies', ids)
})

test('docker cp out of a container (a slow reader) while it is stopped and started: the stop waits for the stream, the tar is whole (dockerd)', { skip: skip ?? false, timeout: 60_000 }, async () => {
  const { id, data } = await withBigFile(3 * 1024 * 1024, 2, true)
  const get = await heldGet(`/containers/${id}/archive?path=/big/data`)
  assert.equal(get.status, 200)
  let stopDone = false
  let pendingAtHalf: boolean | undefined
  const stop = call('POST', `/containers/${id}/stop?t=1`).then((r) => { stopDone = true; return r })
  await sleep(200)
  const tar = await get.read(40, (n) => { if (n >= data.length / 2 && pendingAtHalf === undefined) pendingAtHalf = !stopDone })
  assert.equal(pendingAtHalf, true, 'the stop went ahead while the copy out was half read')
  assert.ok((await fileIn(tar, 'data'))?.equals(data), 'the tar is whole')
  assert.equal((await stop).status, 204)
  assert.equal((await call('POST', `/containers/${id}/start`)).status, 204)
  assert.equal((await call('DELETE', `/containers/${id}?force=1`)).status, 204)
  await assertNothingLeft('after the copy out', [id])
})

test('rm -f during a copy out: it waits for the stream\'s end or its client going away, then removes everything (dockerd)', { skip: skip ?? false, timeout: 60_000 }, async () => {
  for (const start of [true, false]) {
    // a stalled reader: the removal waits; once the reader reads on, the tar is whole and the removal done
    const a = await withBigFile(3 * 1024 * 1024, 3, start)
    const get = await heldGet(`/containers/${a.id}/archive?path=/big/data`)
    assert.equal(get.status, 200)
    const rm = tracked(call('DELETE', `/containers/${a.id}?force=1`))
    await sleep(1500)
    // before: 204 at once, and the container's files deleted 30 s later under the reader
    assert.equal(rm.done(), false, 'the removal did not wait for the copy out')
    assert.ok((await fileIn(await get.read(), 'data'))?.equals(a.data), 'the tar is whole')
    assert.equal((await rm.p).status, 204)
    assert.equal((await call('GET', `/containers/${a.id}/json`)).status, 404)
    // a reader that goes away: the removal goes on at once
    const b = await withBigFile(3 * 1024 * 1024, 4, start)
    const cut = await heldGet(`/containers/${b.id}/archive?path=/big/data`)
    const rmb = tracked(call('DELETE', `/containers/${b.id}?force=1`))
    await sleep(300)
    cut.cut()
    const t0 = Date.now()
    assert.equal((await rmb.p).status, 204)
    assert.ok(Date.now() - t0 < 10_000, 'the removal waited on after the reader went away')
    await assertNothingLeft(`rm -f during a copy out (${start ? 'running' : 'stopped'})`, [a.id, b.id])
  }
  await assertAlive('after the removals')
})

test('docker export across a stop and start, and across rm -f: neither waits, the export is whole, the files go after it (dockerd)', { skip: skip ?? false, timeout: 120_000 }, async () => {
  // (under /zz: an export comes to it last, after the image's files)
  const { id, data } = await withBigFile(3 * 1024 * 1024, 5, true, 'zz')
  const exp = await heldGet(`/containers/${id}/export`)
  assert.equal(exp.status, 200)
  await sleep(200)
  assert.equal((await call('POST', `/containers/${id}/stop?t=1`, undefined, 10_000)).status, 204)
  assert.equal((await call('POST', `/containers/${id}/start`, undefined, 10_000)).status, 204)
  assert.ok((await fileIn(await exp.read(5), 'zz/data'))?.equals(data), 'the export across a stop and start is whole')
  // a removal goes ahead at once; the export, read on much later (past the 30 s after which the files went before),
  // is whole; the files go once it ended
  const exp2 = await heldGet(`/containers/${id}/export`)
  assert.equal(exp2.status, 200)
  await sleep(200)
  assert.equal((await call('DELETE', `/containers/${id}?force=1`, undefined, 10_000)).status, 204)
  assert.equal((await call('GET', `/containers/${id}/json`)).status, 404)
  await sleep(32_000)
  assert.ok((await fileIn(await exp2.read(), 'zz/data'))?.equals(data), 'the export of a container removed meanwhile is whole')
  await assertNothingLeft('after the export', [id])
  await assertAlive('after the exports')
})

test('an --rm container that exits during a copy into it or an export of it: both whole, then it goes, nothing left (dockerd)', { skip: skip ?? false, timeout: 90_000 }, async () => {
  const ids: string[] = []
  for (let round = 0; round < 3; round++) {
    const id = await createContainer(daemon.sock, { Image: 'busybox', Cmd: ['sleep', '1'], HostConfig: { AutoRemove: true } })
    ids.push(id)
    const files = Array.from({ length: 24 }, (_, i) => ({ name: `in/f${i}`, body: pattern(96 * 1024, round * 100 + i) }))
    assert.equal((await call('POST', `/containers/${id}/start`)).status, 204)
    const exp = await heldGet(`/containers/${id}/export`)
    assert.equal(exp.status, 200)
    // before: 409 "stopped or restarted during the copy: … ENOENT" (its monitor removed its trees at the exit)
    const put = await slowPut(id, '/tmp', makeTar([{ name: 'in', type: 'dir' }, ...files]), 30, 30 + round * 20)
    assert.equal(put.status, 200, put.text)
    const tar = await listTar(await exp.read())
    assert.ok(tar.some((e) => e.name === 'bin/busybox'), 'the export is whole')
    await until('the --rm container removed', async () => (await call('GET', `/containers/${id}/json`)).status === 404, 20_000)
  }
  await assertNothingLeft('after the --rm containers', ids)
})

test('copies in and out, HEAD, export, commit and the lifecycle on one container at once: no 5xx, no hang, whole copies, nothing left', { skip: skip ?? false, timeout: 240_000 }, async () => {
  const ids: string[] = []
  const seed = pattern(256 * 1024, 7)
  for (let round = 0; round < 16; round++) {
    const { id } = await withBigFile(256 * 1024, 7, round % 2 === 0, 'big', round % 3 === 2 ? { AutoRemove: true } : round % 3 === 1 ? { RestartPolicy: { Name: 'always' } } : {})
    ids.push(id)
    const c = `/containers/${id}`
    const puts = [0, 1].map((k) => ({ name: `r${round}-${k}.bin`, data: pattern(300 * 1024, round * 2 + k) }))
    const remove = round >= 4
    const at = (ms: number, p: () => Promise<Reply>): Promise<[string, Reply]> => sleep(ms).then(async () => ['', await p()])
    const named = (what: string, p: Promise<[string, Reply]>): Promise<[string, Reply]> => p.then(([, r]) => [what, r])
    const jitter = (): number => Math.floor(Math.random() * 120)
    const ops: Array<Promise<[string, Reply]>> = [
      ...puts.map((f) => named(`PUT ${f.name}`, at(jitter(), async () => await call('PUT', `${c}/archive?path=/tmp`, makeTar([{ name: f.name, body: f.data }]))))),
      named('GET', at(jitter(), async () => await call('GET', `${c}/archive?path=/big/data`))),
      named('HEAD', at(jitter(), async () => await call('HEAD', `${c}/archive?path=/big/data`))),
      named('export', at(jitter(), async () => await call('GET', `${c}/export`))),
      named('stop', at(jitter(), async () => await call('POST', `${c}/stop?t=1`))),
      named('start', at(jitter(), async () => await call('POST', `${c}/start`))),
      named('restart', at(jitter(), async () => await call('POST', `${c}/restart?t=0`))),
      named('kill', at(jitter(), async () => await call('POST', `${c}/kill`))),
      named('rename', at(jitter(), async () => await call('POST', `${c}/rename?name=ar${round}`))),
      named('commit', at(jitter(), async () => await call('POST', `/commit?container=${id}&repo=arsnap${round}`, {}))),
      named('changes', at(jitter(), async () => await call('GET', `${c}/changes`))),
      named('cut GET', at(jitter(), async () => { const g = await heldGet(`${c}/archive?path=/big/data`).catch(() => null); await sleep(50); g?.cut(); return { status: g?.status ?? 0, text: '', headers: {}, body: Buffer.alloc(0), json: () => null } })),
      named('cut export', at(jitter(), async () => { const g = await heldGet(`${c}/export`).catch(() => null); await sleep(50); g?.cut(); return { status: g?.status ?? 0, text: '', headers: {}, body: Buffer.alloc(0), json: () => null } })),
      ...(remove ? [named('rm -f', at(jitter(), async () => await call('DELETE', `${c}?force=1`)))] : [])
    ]
    const allowed: Record<string, number[]> = {
      PUT: [200, 404], GET: [200, 404], HEAD: [200, 404], export: [200, 404, 409], stop: [204, 304, 404], start: [204, 304, 404, 409],
      restart: [204, 404, 409], kill: [204, 404, 409], rename: [204, 404], commit: [201, 404, 409], 'rm -f': [204, 404],
      changes: [200, 404], cut: [200, 404]
    }
    const replies = await Promise.all(ops)
    for (const [what, r] of replies) {
      const kind = what.split(' ')[0] as string
      assert.ok((allowed[what] ?? allowed[kind] ?? []).includes(r.status), `round ${round}: ${what}: ${r.status} ${r.text}`)
      if (r.status === 404 && kind !== 'HEAD' && kind !== 'cut') assert.match(r.text, /No such container/, `round ${round}: ${what}`)
      if (what === 'GET' && r.status === 200) assert.ok((await fileIn(r.body, 'data'))?.equals(seed), `round ${round}: the copy out is whole`)
      if (what === 'export' && r.status === 200) assert.ok((await fileIn(r.body, 'big/data'))?.equals(seed), `round ${round}: the export is whole`)
    }
    const autoRemove = round % 3 === 2
    if (!remove && !autoRemove) {
      // every copy in that answered 200 is in the container, whole
      for (const f of puts) {
        const put = replies.find(([what]) => what === `PUT ${f.name}`)?.[1] as Reply
        if (put.status !== 200) continue
        const back = await call('GET', `${c}/archive?path=/tmp/${f.name}`)
        assert.equal(back.status, 200, `round ${round}: ${f.name} copied in (200) is not there: ${back.text}`)
        assert.ok((await fileIn(back.body, f.name))?.equals(f.data), `round ${round}: ${f.name} is whole`)
      }
    }
    if (!remove) assert.ok([204, 404].includes((await call('DELETE', `${c}?force=1`)).status))
    const img = await call('GET', `/images/arsnap${round}/json`)
    if (img.status === 200) assert.equal((await call('DELETE', `/images/arsnap${round}`)).status, 200)
    await assertAlive(`round ${round}`)
  }
  await assertNothingLeft('after the rounds', ids)
})
