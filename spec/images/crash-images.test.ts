// A daemon killed (-9) in the middle of image work (an import, a load, a commit, a build, tags and removals) restarts
// with its images intact: every image it lists inspects, has its history and saves whole (each layer is there), what
// a finished request made is still there, nothing half-written is left in the layer store or the ingest directory,
// and a container from the first image still runs. Each kind of work runs once to completion (to learn how long it
// takes), then is killed at moments spread over that time.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { readdirSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import type { ChildProcess } from 'node:child_process'
import {
  containerSkipReason, importBusybox, createContainer, request, tmpDir, uniqueNetworkOptions, daemonNetworkArgs,
  cleanupDaemon, startDaemonProcess
} from '../helpers/engine.js'
import { until } from '../helpers/poll.js'
import { makeTar } from '../helpers/tar.js'

const skip = containerSkipReason()
const netOpts = uniqueNetworkOptions()
const dir = skip === null ? tmpDir() : ''
const sock = join(dir, 'b.sock')
let daemon: ChildProcess | undefined
after(async () => { if (dir !== '') await cleanupDaemon(daemon, dir, netOpts) })

async function start (): Promise<void> { daemon = await startDaemonProcess(dir, daemonNetworkArgs(netOpts)) }
async function kill (): Promise<void> {
  const d = daemon as ChildProcess
  if (d.exitCode !== null || d.signalCode !== null) return
  const exited = once(d, 'exit')
  d.kill('SIGKILL')
  await exited
}

/** Files of random content in a directory of their own: each import, load or build makes a new layer. */
const freshTar = (tag: string): Buffer => makeTar([
  { name: `${tag}/`, type: 'dir' },
  ...Array.from({ length: 4 }, (_, i) => ({ name: `${tag}/f${i}`, body: randomBytes(120_000).toString('base64') }))
])

interface Work {
  name: string
  /** Starts the work; resolves with the reference it made once the daemon said it is done. */
  run: (round: number) => Promise<string>
}

const ok = (what: string, status: number, text: string, want = 200): void => {
  assert.equal(status, want, `${what}: ${status} ${text}`)
  assert.doesNotMatch(text, /"error(Detail)?"/, `${what}: ${text}`)
}

test('image work killed at random moments: the daemon restarts with its images whole', { skip: skip ?? false, timeout: 300_000 }, async () => {
  await start()
  const base = await importBusybox(sock)
  // saved images to load: made and removed again, so that a load writes their layers anew
  const saved: Buffer[] = []
  for (let i = 0; i < 3; i++) {
    const r = await request(sock, 'POST', `/images/create?fromSrc=-&repo=saved&tag=s${i}`, { raw: freshTar(`s${i}`), headers: { 'Content-Type': 'application/x-tar' } })
    ok('import to save', r.status, r.text)
    const tar = await request(sock, 'GET', `/images/get?names=saved:s${i}`)
    assert.equal(tar.status, 200)
    saved.push(tar.body)
    assert.equal((await request(sock, 'DELETE', `/images/saved:s${i}`)).status, 200)
  }
  const ctr = await createContainer(sock, { Image: 'busybox', Cmd: ['true'] })

  const works: Work[] = [
    {
      name: 'import',
      run: async (round) => {
        const r = await request(sock, 'POST', `/images/create?fromSrc=-&repo=crash&tag=i${round}`, { raw: freshTar(`i${round}`), headers: { 'Content-Type': 'application/x-tar' } })
        ok('import', r.status, r.text)
        return `crash:i${round}`
      }
    },
    {
      name: 'load',
      run: async (round) => {
        const r = await request(sock, 'POST', '/images/load?quiet=1', { raw: saved[round % saved.length] as Buffer, headers: { 'Content-Type': 'application/x-tar' } })
        ok('load', r.status, r.text)
        return `saved:s${round % saved.length}`
      }
    },
    {
      name: 'commit',
      run: async (round) => {
        const put = await request(sock, 'PUT', `/containers/${ctr}/archive?path=/`, { raw: freshTar(`c${round}`), headers: { 'Content-Type': 'application/x-tar' } })
        assert.equal(put.status, 200, put.text)
        const r = await request(sock, 'POST', `/commit?container=${ctr}&repo=crash&tag=c${round}`)
        ok('commit', r.status, r.text, 201)
        return `crash:c${round}`
      }
    },
    {
      name: 'build',
      run: async (round) => {
        const context = makeTar([
          { name: 'Dockerfile', body: `FROM busybox\nCOPY b${round} /b${round}\nENV ROUND=${round}\n` },
          { name: `b${round}/`, type: 'dir' },
          { name: `b${round}/f`, body: randomBytes(200_000).toString('base64') }
        ])
        const r = await request(sock, 'POST', `/build?t=crash:b${round}`, { raw: context, headers: { 'Content-Type': 'application/x-tar' } })
        ok('build', r.status, r.text)
        return `crash:b${round}`
      }
    },
    {
      name: 'tag and remove',
      run: async (round) => {
        assert.equal((await request(sock, 'POST', `/images/busybox/tag?repo=crash&tag=t${round}`)).status, 201)
        if (round > 0) await request(sock, 'DELETE', `/images/crash:t${round - 1}`)
        return `crash:t${round}`
      }
    }
  ]

  /** What finished requests made: they must outlive every later kill. */
  const made = new Set<string>()
  const check = async (what: string): Promise<void> => {
    const list = await request(sock, 'GET', '/images/json')
    assert.equal(list.status, 200, `${what}: ${list.text}`)
    const images = list.json() as Array<{ Id: string, RepoTags: string[] | null }>
    assert.ok(images.some((i) => i.Id === base), `${what}: the first image is there`)
    for (const ref of made) {
      const r = await request(sock, 'GET', `/images/${ref}/json`)
      assert.equal(r.status, 200, `${what}: ${ref}, made by a finished request, is there: ${r.text}`)
    }
    for (const img of images) {
      assert.equal((await request(sock, 'GET', `/images/${img.Id}/json`)).status, 200, `${what}: ${img.Id} inspects`)
      assert.equal((await request(sock, 'GET', `/images/${img.Id}/history`)).status, 200, `${what}: ${img.Id} has its history`)
      // the save reads every layer of the image: a layer missing or half there fails it
      const tar = await request(sock, 'GET', `/images/get?names=${img.Id}`)
      assert.equal(tar.status, 200, `${what}: ${img.Id} saves`)
      assert.ok(tar.body.length > 1024 && tar.body.subarray(-1024).every((b) => b === 0), `${what}: ${img.Id} saves whole (${tar.body.length} bytes)`)
    }
    const leftovers = (): string[] => [
      ...readdirSync(join(dir, 'data', 'layers')).filter((n) => n.startsWith('tmp-')),
      ...(existsSync(join(dir, 'data', 'content', 'ingest')) ? readdirSync(join(dir, 'data', 'content', 'ingest')) : [])
    ]
    await until(`${what}: nothing half-written left (${leftovers().join(' ')})`, async () => leftovers().length === 0, 20_000)
  }

  let round = 0
  for (const work of works) {
    // once to completion: how long it takes here
    const t0 = Date.now()
    made.add(await work.run(round++))
    const took = Math.max(20, Date.now() - t0)
    for (let k = 0; k < 3; k++) {
      const at = Math.floor(took * (0.15 + 0.35 * k) * (0.8 + 0.4 * Math.random()))
      const r = round++
      // the tag an unfinished round may have removed is no longer owed
      if (work.name === 'tag and remove') made.delete(`crash:t${r - 1}`)
      const finished = work.run(r).then((ref) => ref, () => null)
      await new Promise((resolve) => setTimeout(resolve, at))
      await kill()
      const ref = await finished
      if (ref !== null) made.add(ref)
      process.stdout.write(`# ${work.name}: killed after ${at} of ${took} ms, ${ref === null ? 'cut' : 'already finished'}\n`)
      await start()
      await check(`${work.name} killed after ${at} of ${took} ms`)
    }
  }

  // the first image still runs a container
  const id = await createContainer(sock, { Image: 'busybox', Cmd: ['sh', '-c', 'exit 3'] })
  assert.equal((await request(sock, 'POST', `/containers/${id}/start`)).status, 204)
  const wait = await request(sock, 'POST', `/containers/${id}/wait`)
  assert.equal((wait.json() as { StatusCode: number }).StatusCode, 3)
  // and the committed container is still there
  assert.equal((await request(sock, 'GET', `/containers/${ctr}/json`)).status, 200)
})
