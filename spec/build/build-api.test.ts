// POST /build on the wire: the progress records exactly as dockerd writes them, gzip contexts, bad contexts
// (`..` entries, over the size limit, no Dockerfile), refused options, /_ping without BuildKit, prune and cancel.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { gzipSync } from 'node:zlib'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { createEngine } from '../../lib/index.js'
import { demuxAll } from '../../lib/stream/stdcopy.js'
import { makeTar } from '../helpers/tar.js'
import { containerSkipReason, importBusybox, request, tmpDir, cleanupDir, uniqueNetworkOptions } from '../helpers/engine.js'

const skip = containerSkipReason()

/** A tar of (name, content) files; names are written as given (even `..` ones). */
function tar (files: Array<[string, string, string?]>): Buffer {
  const parts: Buffer[] = []
  for (const [name, content, link] of files) {
    const h = Buffer.alloc(512)
    h.write(name, 0, 'utf8')
    h.write('0000644\0', 100); h.write('0000000\0', 108); h.write('0000000\0', 116)
    h.write(Buffer.byteLength(content).toString(8).padStart(11, '0') + '\0', 124)
    h.write('14000000000\0', 136)
    h.write('        ', 148)
    h.write(link !== undefined ? '2' : '0', 156)
    if (link !== undefined) h.write(link, 157)
    h.write('ustar\0', 257); h.write('00', 263)
    let sum = 0
    for (const b of h) sum += b
    h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148)
    const body = Buffer.alloc(Math.ceil(Buffer.byteLength(content) / 512) * 512)
    body.write(content)
    parts.push(h, body)
  }
  parts.push(Buffer.alloc(1024))
  return Buffer.concat(parts)
}

function records (text: string): Array<Record<string, unknown>> {
  return text.split('\r\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>)
}

test('POST /build on the wire', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  const socket = join(dir, 'b.sock')
  // its own bridge, subnet and chains (as startEngine gives), removed at the end
  const engine = await createEngine({ dataRoot: join(dir, 'data'), hosts: [`unix://${socket}`], execRoot: join(dir, 'run'), buildContextLimit: 64 * 1024, ...uniqueNetworkOptions() })
  t.after(async () => { await engine.close(); await engine.network.purgeHost(); await cleanupDir(dir) })
  const bbId = await importBusybox(socket)
  const build = async (query: string, body: Buffer, headers: Record<string, string> = {}): ReturnType<typeof request> =>
    await request(socket, 'POST', `/v1.50/build${query}`, { raw: body, headers: { 'Content-Type': 'application/x-tar', ...headers } })

  /** What `cmd` prints (stdout) in a container of `image`, run to its end and removed. */
  const output = async (image: string, cmd: string[]): Promise<string> => {
    const id = ((await request(socket, 'POST', '/containers/create', { body: { Image: image, Cmd: cmd } })).json() as { Id: string }).Id
    assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
    await request(socket, 'POST', `/containers/${id}/wait`)
    const logs = demuxAll((await request(socket, 'GET', `/containers/${id}/logs?stdout=1&stderr=1`)).body)
    await request(socket, 'DELETE', `/containers/${id}?force=1`)
    assert.equal(logs.stderr.toString(), '')
    return logs.stdout.toString()
  }

  await t.test('/_ping does not advertise BuildKit', async () => {
    const r = await request(socket, 'GET', '/_ping')
    assert.equal(r.headers['builder-version'], '1')
  })

  await t.test('the progress stream, record by record (gzip context)', async () => {
    const ctx = gzipSync(tar([['Dockerfile', 'FROM busybox\nRUN echo hi\nCMD ["sh"]\n']]))
    const r = await build('?t=wire:1&t=wire:2', ctx)
    assert.equal(r.status, 200)
    assert.equal(r.headers['content-type'], 'application/json')
    const recs = records(r.text)
    const short = bbId.slice(7, 19)
    assert.deepEqual(recs.slice(0, 4), [{ stream: 'Step 1/3 : FROM busybox\n' }, { stream: ` ---> ${short}\n` }, { stream: 'Step 2/3 : RUN echo hi\n' }, recs[3]])
    assert.match(recs[3]?.stream as string, /^ ---> Running in [0-9a-f]{12}\n$/)
    const rest = recs.slice(4).map((x) => x.stream ?? x)
    const id = (recs.find((x) => x.aux !== undefined)?.aux as { ID: string }).ID
    assert.match(id, /^sha256:[0-9a-f]{64}$/)
    const text = rest.map((x) => typeof x === 'string' ? x : JSON.stringify(x)).join('')
    assert.match(text, /^hi\nRemoving intermediate container [0-9a-f]{12}\n ---> [0-9a-f]{12}\nStep 3\/3 : CMD \["sh"\]\n ---> ([0-9a-f]{12})\n\{"aux":\{"ID":"sha256:\1[0-9a-f]{52}"\}\}Successfully built \1\nSuccessfully tagged wire:1\nSuccessfully tagged wire:2\n$/)
    // older API versions show the step's command as ContainerConfig, as dockerd does
    const old = (await request(socket, 'GET', '/v1.41/images/wire:1/json')).json() as { ContainerConfig: { Cmd: string[] }, Config: { Cmd: string[] } }
    assert.deepEqual([old.ContainerConfig.Cmd, old.Config.Cmd], [['/bin/sh', '-c', '#(nop) ', 'CMD ["sh"]'], ['sh']])
    const q = await build('?q=1', gzipSync(tar([['Dockerfile', 'FROM busybox\nRUN echo hi\nCMD ["sh"]\n']])))
    assert.deepEqual(records(q.text), [{ aux: { ID: id } }, { stream: `${id}\n` }])
  })

  await t.test('a failing RUN: the errorDetail record with the exit code', async () => {
    const r = await build('?forcerm=1', tar([['Dockerfile', 'FROM busybox\nRUN exit 3\n']]))
    const last = records(r.text).pop()
    const msg = "The command '/bin/sh -c exit 3' returned a non-zero code: 3"
    assert.deepEqual(last, { errorDetail: { code: 3, message: msg }, error: msg })
    const ps = await request(socket, 'GET', '/containers/json?all=1')
    assert.deepEqual(ps.json(), [])
  })

  await t.test('rm=0: the kept step containers are stopped containers, their root filesystems not mounted', async () => {
    const r = await build('?rm=0', tar([['Dockerfile', 'FROM busybox\nRUN echo one > /one\nRUN cat /one\n']]))
    assert.equal(r.status, 200)
    assert.doesNotMatch(r.text, /Removing intermediate container/)
    const kept = (await request(socket, 'GET', '/containers/json?all=1')).json() as Array<{ Id: string, State: string }>
    assert.equal(kept.length, 2, JSON.stringify(kept))
    const mounts = (await import('node:fs')).readFileSync('/proc/mounts', 'utf8')
    for (const c of kept) {
      assert.equal(c.State, 'exited')
      assert.ok(!mounts.includes(c.Id), `${c.Id} is still mounted`)
    }
    // mounted again at its start, and its files are there
    const ex = await request(socket, 'POST', `/containers/${kept[0]?.Id ?? ''}/start`)
    assert.equal(ex.status, 204, ex.text)
    for (const c of kept) assert.equal((await request(socket, 'DELETE', `/containers/${c.Id}?force=1`)).status, 204)
  })

  await t.test('bad contexts and options: a clear error each, nothing left behind', async () => {
    const cases: Array<[string, Buffer, number, RegExp]> = [
      ['', tar([['../escape.txt', 'x'], ['Dockerfile', 'FROM busybox\n']]), 400, /invalid tar entry "\.\.\/escape\.txt": path contains '\.\.'/],
      ['', tar([['Dockerfile', 'FROM busybox\n'], ['big', 'x'.repeat(80 * 1024)]]), 413, /the build context is larger than the limit of 65536 bytes/],
      ['', tar([['other', 'x']]), 400, /Cannot locate specified Dockerfile: Dockerfile/],
      ['?dockerfile=sub/Nope', tar([['Dockerfile', 'FROM busybox\n']]), 400, /Cannot locate specified Dockerfile: sub\/Nope/],
      ['?squash=1', tar([['Dockerfile', 'FROM busybox\n']]), 400, /squash is only supported with experimental mode/],
      ['?buildargs=notjson', tar([['Dockerfile', 'FROM busybox\n']]), 400, /invalid buildargs parameter/],
      ['?remote=https://example.com/x.git', Buffer.alloc(0), 400, /remote build contexts are not supported/],
      ['?version=2', Buffer.alloc(0), 400, /BuildKit is not supported/],
      ['?t=Bad:Name:x', tar([['Dockerfile', 'FROM busybox\n']]), 400, /invalid reference format/],
      ['', Buffer.from('definitely not a tar archive, just text that goes on and on'), 400, /build context/],
      ['', tar([['Dockerfile', 'FROM busybox\nBOGUS x\n']]), 400, /dockerfile parse error on line 2: unknown instruction: BOGUS/]
    ]
    for (const [query, body, status, want] of cases) {
      const r = await build(query, body)
      assert.equal(r.status, status, `${query} ${r.text}`)
      assert.match((r.json() as { message: string }).message, want)
    }
    assert.equal(existsSync(join(dir, 'data', 'escape.txt')), false)
    assert.deepEqual(readdirSync(join(dir, 'data', 'build')), [])
    assert.deepEqual((await request(socket, 'GET', '/containers/json?all=1')).json(), [])
  })

  await t.test('labels, buildargs, target and a .dockerignore applied on the daemon side', async () => {
    const ctx = tar([
      ['Dockerfile', 'FROM busybox AS a\nARG X\nCOPY . /ctx/\nRUN echo "x=$X" > /x && ls /ctx > /ls\nFROM a AS b\nRUN false\n'],
      ['.dockerignore', '*.secret\n!keep.secret\n'],
      ['drop.secret', 's'], ['keep.secret', 'k'], ['plain.txt', 'p']
    ])
    const r = await build(`?t=wire:args&target=a&buildargs=${encodeURIComponent('{"X":"42"}')}&labels=${encodeURIComponent('{"l1":"v1"}')}`, ctx)
    assert.match(r.text, /Successfully tagged wire:args/, r.text)
    const insp = (await request(socket, 'GET', '/images/wire:args/json')).json() as { Config: { Labels: Record<string, string> } }
    assert.deepEqual(insp.Config.Labels, { l1: 'v1' })
    const c = (await request(socket, 'POST', '/containers/create', { body: { Image: 'wire:args', Cmd: ['cat', '/x', '/ls'] } })).json() as { Id: string }
    await request(socket, 'POST', `/containers/${c.Id}/start`)
    await request(socket, 'POST', `/containers/${c.Id}/wait`)
    const logs = await request(socket, 'GET', `/containers/${c.Id}/logs?stdout=1`)
    assert.match(logs.body.subarray(8).toString(), /x=42/)
    assert.doesNotMatch(logs.text, /drop\.secret/)
    assert.match(logs.text, /keep\.secret/)
    await request(socket, 'DELETE', `/containers/${c.Id}`)
  })

  await t.test('FROM scratch, COPY --from an image, ADD from a (loopback) URL', async () => {
    const srv = http.createServer((req, res) => {
      if (req.url === '/files/remote.txt') { res.end('over http\n'); return }
      res.writeHead(404); res.end()
    })
    await new Promise<void>((resolve) => { srv.listen(0, '127.0.0.1', resolve) })
    t.after(() => { srv.close() })
    const port = (srv.address() as AddressInfo).port
    const df = `FROM scratch\nCOPY --from=busybox /bin/busybox /bin/busybox\nADD http://127.0.0.1:${port}/files/remote.txt /data/\nENTRYPOINT ["/bin/busybox"]\nCMD ["cat", "/data/remote.txt"]\n`
    const r = await build('?t=wire:scratch', tar([['Dockerfile', df]]))
    // Go's encoder escapes '>' as dockerd's does; FROM scratch has no ID to print
    assert.ok(r.text.startsWith('{"stream":"Step 1/5 : FROM scratch\\n"}\r\n{"stream":" ---\\u003e \\n"}\r\n'), r.text)
    assert.match(r.text, /Successfully tagged wire:scratch/, r.text)
    const c = (await request(socket, 'POST', '/containers/create', { body: { Image: 'wire:scratch' } })).json() as { Id: string }
    await request(socket, 'POST', `/containers/${c.Id}/start`)
    assert.equal(((await request(socket, 'POST', `/containers/${c.Id}/wait`)).json() as { StatusCode: number }).StatusCode, 0)
    assert.equal((await request(socket, 'GET', `/containers/${c.Id}/logs?stdout=1`)).body.subarray(8).toString(), 'over http\n')
    await request(socket, 'DELETE', `/containers/${c.Id}`)
    const insp = (await request(socket, 'GET', '/images/wire:scratch/json')).json() as { RootFS: { Layers: string[] } }
    assert.equal(insp.RootFS.Layers.length, 2)
    // a symlink in the --from image resolves inside that image (never on the host)
    const linked = await build('', tar([['Dockerfile', 'FROM busybox\nCOPY --from=busybox /bin/sh /copied-sh\nRUN cmp /copied-sh /bin/busybox && echo same-file\n']]))
    assert.match(linked.text, /\{"stream":"same-file\\n"\}/, linked.text)
    const missing = await build('', tar([['Dockerfile', `FROM busybox\nADD http://127.0.0.1:${port}/nope /x\n`]]))
    assert.match(records(missing.text).pop()?.error as string, /ADD failed: unable to fetch http:\/\/127\.0\.0\.1:\d+\/nope: failed to GET .* with status 404/)
  })

  await t.test('a client that goes away mid-RUN: the container is killed and removed', async () => {
    const body = tar([['Dockerfile', 'FROM busybox\nRUN echo started; sleep 60\n']])
    // the container's destroy event is the signal that the builder cleaned up
    const destroyed = new Promise<void>((resolve, reject) => {
      const filters = encodeURIComponent(JSON.stringify({ type: ['container'], event: ['destroy'] }))
      const ev = http.get({ socketPath: socket, path: `/v1.50/events?filters=${filters}` }, (res) => {
        res.on('data', () => { ev.destroy(); resolve() })
        res.on('error', () => {})
      })
      ev.on('error', () => {})
      setTimeout(() => { ev.destroy(); reject(new Error('no destroy event')) }, 30_000).unref()
    })
    await new Promise<void>((resolve, reject) => {
      const req = http.request({ socketPath: socket, method: 'POST', path: '/v1.50/build?nocache=1', headers: { 'Content-Type': 'application/x-tar', 'Content-Length': body.length } }, (res) => {
        res.on('data', (d: Buffer) => { if (d.toString().includes('{"stream":"started\\n"}')) { req.destroy(); resolve() } })
        res.on('error', () => {})
      })
      req.on('error', () => {})
      req.end(body)
      setTimeout(() => { reject(new Error('no output')) }, 30_000).unref()
    })
    await destroyed
    assert.deepEqual((await request(socket, 'GET', '/containers/json?all=1')).json(), [])
  })

  await t.test('COPY from the context: symlinks followed as sources, kept inside directories; globs; a symlink out of the context refused', async () => {
    const ctx = tar([
      ['Dockerfile', 'FROM busybox\nCOPY src/link.txt /single.txt\nCOPY src /tree/\nCOPY src/*.txt /glob/\nCMD ["sh", "-c", "cat /single.txt; readlink /tree/link.txt; ls /glob"]\n'],
      ['src/real.txt', 'real\n'], ['src/link.txt', '', 'real.txt'], ['src/sub/deep.txt', 'deep\n']
    ])
    const r = await build('?t=wire:links', ctx)
    assert.match(r.text, /Successfully tagged wire:links/, r.text)
    const c = (await request(socket, 'POST', '/containers/create', { body: { Image: 'wire:links' } })).json() as { Id: string }
    await request(socket, 'POST', `/containers/${c.Id}/start`)
    await request(socket, 'POST', `/containers/${c.Id}/wait`)
    const logs = (await request(socket, 'GET', `/containers/${c.Id}/logs?stdout=1`)).body
    const text = Buffer.concat([...function * () { for (let o = 0; o < logs.length; o += 8 + logs.readUInt32BE(o + 4)) yield logs.subarray(o + 8, o + 8 + logs.readUInt32BE(o + 4)) }()]).toString()
    assert.equal(text, 'real\nreal.txt\nlink.txt\nreal.txt\n')
    await request(socket, 'DELETE', `/containers/${c.Id}`)
    const out = await build('', tar([['Dockerfile', 'FROM busybox\nCOPY escape /x\n'], ['escape', '', '../../../etc/passwd']]))
    assert.match(records(out.text).pop()?.error as string, /COPY failed: file not found in build context/)
  })

  await t.test('COPY keeps setuid and setgid bits, with and without --chown (the owner is set before the mode)', async () => {
    const ctx = makeTar([{ name: 'Dockerfile', body: 'FROM busybox\nCOPY p /p\nCOPY --chown=5:5 p /q\n' }, { name: 'p', body: 'x\n', mode: 0o6755 }])
    assert.match((await build('?t=wire:suid', ctx)).text, /Successfully tagged wire:suid/)
    assert.equal(await output('wire:suid', ['stat', '-c', '%a %u:%g', '/p', '/q']), '6755 0:0\n6755 5:5\n')
  })

  await t.test('WORKDIR below an image symlink is made where the link leads (the link stays a link)', async () => {
    const r = await build('?t=wire:wd', tar([['Dockerfile', 'FROM busybox\nRUN mkdir /target && ln -s /target /w\nWORKDIR /w/sub\n']]))
    assert.match(r.text, /Successfully tagged wire:wd/, r.text)
    assert.equal(await output('wire:wd', ['sh', '-c', 'readlink /w; ls -d /target/sub']), '/target\n/target/sub\n')
  })

  await t.test('ENV: the values of one instruction see the variables as they were before it', async () => {
    const r = await build('?t=wire:env', tar([['Dockerfile', 'FROM busybox\nENV abc=hello\nENV abc=bye def=$abc\nENV ghi=$abc\n']]))
    assert.match(r.text, /Successfully tagged wire:env/, r.text)
    const insp = (await request(socket, 'GET', '/images/wire:env/json')).json() as { Config: { Env: string[] } }
    assert.deepEqual(insp.Config.Env.slice(1), ['abc=bye', 'def=hello', 'ghi=bye'])
  })

  await t.test('cachefrom: a loaded image (no intermediate images) serves as the cache', async () => {
    const df = tar([['Dockerfile', 'FROM busybox\nENV CF=1\nRUN echo cf > /cf\nCMD ["cat", "/cf"]\n']])
    assert.match((await build('?t=wire:cf', df)).text, /Successfully tagged wire:cf/)
    const saved = await request(socket, 'GET', '/images/wire:cf/get')
    assert.equal(saved.status, 200)
    assert.equal((await request(socket, 'DELETE', '/images/wire:cf')).status, 200)
    const loaded = await request(socket, 'POST', '/images/load?quiet=1', { raw: saved.body, headers: { 'Content-Type': 'application/x-tar' } })
    assert.equal(loaded.status, 200, loaded.text)
    const without = await build('?t=wire:cf2', df)
    assert.doesNotMatch(without.text, /Using cache/)
    await request(socket, 'DELETE', '/images/wire:cf2')
    const withCache = await build(`?t=wire:cf3&cachefrom=${encodeURIComponent('["wire:cf"]')}`, df)
    assert.equal((withCache.text.match(/Using cache/g) ?? []).length, 3, withCache.text)
    const a = (await request(socket, 'GET', '/images/wire:cf/json')).json() as { Id: string }
    const b = (await request(socket, 'GET', '/images/wire:cf3/json')).json() as { Id: string }
    assert.equal(b.Id, a.Id)
  })

  await t.test('RUN with the build\'s memory limit, shm size and extra hosts', async () => {
    const df = tar([['Dockerfile', 'FROM busybox\nRUN echo "mem=$(cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes)"; echo "shm=$(df -k /dev/shm | tail -1 | awk \'{print $2}\')"; grep buildhost /etc/hosts\n']])
    const r = await build(`?nocache=1&memory=${64 * 1024 * 1024}&shmsize=${8 * 1024 * 1024}&extrahosts=buildhost:10.1.2.3`, df)
    assert.match(r.text, /mem=67108864\\n/, r.text)
    assert.match(r.text, /shm=8192\\n/, r.text)
    assert.match(r.text, /10\.1\.2\.3\\tbuildhost/, r.text)
  })

  await t.test('a RUN whose container cannot start (no shell in the image): an error, no hang, nothing left', async () => {
    const r = await build('?forcerm=1', tar([['Dockerfile', 'FROM scratch\nCOPY Dockerfile /x\nRUN true\n']]))
    const last = records(r.text).pop() as { error?: string }
    assert.match(last.error ?? '', /sh|no such file|not found/i, r.text)
    assert.deepEqual((await request(socket, 'GET', '/containers/json?all=1')).json(), [])
  })

  await t.test('RUN in the build network mode', async () => {
    const df = tar([['Dockerfile', 'FROM busybox\nRUN echo "ifaces=$(grep -c : /proc/net/dev)"\n']])
    const none = await build('?nocache=1&networkmode=none', df)
    assert.match(none.text, /ifaces=1\\n/, none.text)
    const dflt = await build('?nocache=1', df)
    assert.match(dflt.text, /ifaces=2\\n/, dflt.text)
  })

  await t.test('build/prune, build/cancel, system df', async () => {
    // an untagged result and its chain are cache only
    assert.match((await build('', tar([['Dockerfile', 'FROM busybox\nENV A=1\nENV B=2\n']]))).text, /Successfully built/)
    const df = (await request(socket, 'GET', '/system/df?type=build-cache')).json() as { BuildCache: Array<{ ID: string, Type: string }> }
    assert.ok(df.BuildCache.length > 0)
    assert.equal(df.BuildCache[0]?.Type, 'regular')
    assert.equal((await request(socket, 'POST', `/build/prune?filters=${encodeURIComponent('{"shared":["true"]}')}`)).status, 400)
    const kept = (await request(socket, 'POST', `/build/prune?keep-storage=${1024 ** 4}`)).json() as { CachesDeleted: string[] | null }
    assert.equal(kept.CachesDeleted, null)
    // API 1.48's space options: a cap the cache is under, a free-space floor the disk has: nothing goes
    for (const q of [`max-used-space=${1024 ** 4}`, 'min-free-space=1', 'min-free-space=1&reserved-space=1']) {
      const r = await request(socket, 'POST', `/v1.48/build/prune?${q}`)
      assert.equal(r.status, 200, r.text)
      assert.equal((r.json() as { CachesDeleted: string[] | null }).CachesDeleted, null, q)
    }
    const p = (await request(socket, 'POST', '/build/prune')).json() as { CachesDeleted: string[] | null, SpaceReclaimed: number }
    assert.ok((p.CachesDeleted ?? []).length > 0)
    assert.equal(typeof p.SpaceReclaimed, 'number')
    assert.equal((await request(socket, 'POST', '/build/cancel?id=nope')).status, 200)
    assert.equal((await request(socket, 'POST', '/build/cancel')).status, 400)
    // the tagged results still run
    const again = await build('', tar([['Dockerfile', 'FROM busybox\nRUN echo hi\nCMD ["sh"]\n']]))
    assert.match(again.text, /Using cache/)
  })
})
