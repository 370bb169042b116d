// POST /build query parameters and rules checked against dockerd's classic builder: cpu* limits in the RUN container,
// platform, rm=0, q=1 (a failure replays the held output, then the in-band error), cancel by buildid, the cache key
// ignoring mtimes, ADD of a hostile archive, and variable substitution instruction by instruction.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { join } from 'node:path'
import { existsSync, readdirSync } from 'node:fs'
import { createEngine } from '../../lib/index.js'
import { containerSkipReason, importBusybox, request, tmpDir, cleanupDir, uniqueNetworkOptions } from '../helpers/engine.js'
import { makeTar as tar } from '../helpers/tar.js'

const skip = containerSkipReason()

function records (text: string): Array<Record<string, unknown>> {
  return text.split('\r\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>)
}

test('POST /build parameters and rules', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  const socket = join(dir, 'b.sock')
  const netOptions = uniqueNetworkOptions()
  const engine = await createEngine({ dataRoot: join(dir, 'data'), hosts: [`unix://${socket}`], execRoot: join(dir, 'run'), ...netOptions })
  t.after(async () => { await engine.close(); await engine.network.purgeHost(); await cleanupDir(dir) })
  await importBusybox(socket)
  const build = async (query: string, body: Buffer): ReturnType<typeof request> =>
    await request(socket, 'POST', `/v1.41/build${query}`, { raw: body, headers: { 'Content-Type': 'application/x-tar' } })
  const containers = async (): Promise<Array<{ Id: string, State: string }>> => (await request(socket, 'GET', '/containers/json?all=1')).json() as Array<{ Id: string, State: string }>
  const inspect = async (ref: string): Promise<{ Id: string, Config: Record<string, unknown> }> => (await request(socket, 'GET', `/images/${ref}/json`)).json() as { Id: string, Config: Record<string, unknown> }

  await t.test('cpushares, cpuperiod, cpuquota, cpusetcpus, ulimits reach the RUN container', async () => {
    const df = 'FROM busybox\nRUN echo "quota=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cut -d" " -f1 /sys/fs/cgroup/cpu.max)"; echo "shares=$(cat /sys/fs/cgroup/cpu/cpu.shares 2>/dev/null || cat /sys/fs/cgroup/cpu.weight)"; ' +
      'echo "cpus=$(cat /sys/fs/cgroup/cpuset/cpuset.cpus 2>/dev/null || cat /sys/fs/cgroup/cpuset.cpus)"; echo "nofile=$(ulimit -n)"\n'
    const ulimits = encodeURIComponent(JSON.stringify([{ Name: 'nofile', Soft: 1234, Hard: 1234 }]))
    const r = await build(`?nocache=1&cpushares=512&cpuperiod=100000&cpuquota=50000&cpusetcpus=0&ulimits=${ulimits}`, tar([{ name: 'Dockerfile', body: df }]))
    assert.match(r.text, /quota=50000\\n/, r.text)
    // cgroup v1 shares, or v2's weight for 512 shares
    assert.match(r.text, /shares=(512|20)\\n/, r.text)
    assert.match(r.text, /cpus=0\\n/, r.text)
    assert.match(r.text, /nofile=1234\\n/, r.text)
  })

  await t.test('networkmode: a user-defined network (the RUN container on its subnet) and host', async () => {
    // a subnet of this engine's own address pool: no other engine on the host has it
    const sub = (netOptions.defaultAddressPools[0]?.base ?? '').split('.').slice(0, 2).join('.') + '.250'
    const net = await request(socket, 'POST', '/networks/create', { body: { Name: 'bldnet', IPAM: { Config: [{ Subnet: `${sub}.0/24` }] } } })
    assert.equal(net.status, 201, net.text)
    const df = tar([{ name: 'Dockerfile', body: 'FROM busybox\nRUN echo "addr=$(ip -4 -o addr show eth0 | awk \'{print $4}\')"\n' }])
    assert.match((await build('?nocache=1&networkmode=bldnet', df)).text, new RegExp(`addr=${sub.replace(/\./g, '\\.')}\\.\\d+/24\\\\n`))
    const host = await build('?nocache=1&networkmode=host', tar([{ name: 'Dockerfile', body: 'FROM busybox\nRUN echo "lo=$(grep -c lo: /proc/net/dev) all=$(grep -c : /proc/net/dev)"\n' }]))
    // the host's interfaces: at least lo and one more (10 to 19 as well: other engines' bridges and veths)
    assert.match(host.text, /lo=1 all=([2-9]|[1-9]\d+)\\n/, host.text)
    assert.equal((await request(socket, 'DELETE', '/networks/bldnet')).status, 204)
  })

  await t.test('platform: linux ones build (also FROM --platform), others are refused', async () => {
    const df = tar([{ name: 'Dockerfile', body: 'FROM --platform=linux/amd64 busybox\nENV P=1\n' }])
    assert.match((await build('?platform=linux', df)).text, /Successfully built/)
    const bad = await build('?platform=windows/amd64', df)
    assert.equal(bad.status, 400)
    assert.match((bad.json() as { message: string }).message, /"windows\/amd64": unsupported platform/)
    // isolation: only the default on Linux (dockerd's wording); outputs: a BuildKit exporter, said so in the stream
    assert.match((await build('?isolation=default', df)).text, /Successfully built/)
    const iso = await build('?isolation=hyperv', df)
    assert.deepEqual([iso.status, (iso.json() as { message: string }).message], [400, 'Unsupported isolation: "hyperv"'])
    const outputs = await build(`?outputs=${encodeURIComponent('[{"Type":"local","Attrs":{"dest":"/tmp/x"}}]')}`, df)
    assert.match(outputs.text, /^\{"stream":"\[Warning\] outputs \(--output\) need BuildKit: the classic builder makes the image and exports nothing\\n"\}/)
    assert.match(outputs.text, /Successfully built/)
  })

  await t.test('rm=0 keeps a successful RUN\'s (stopped) container, as dockerd', async () => {
    const r = await build('?rm=0&nocache=1', tar([{ name: 'Dockerfile', body: 'FROM busybox\nRUN echo kept\n' }]))
    assert.match(r.text, /Successfully built/, r.text)
    assert.doesNotMatch(r.text, /Removing intermediate container/)
    const id = /Running in ([0-9a-f]{12})/.exec(r.text)?.[1] as string
    const left = await containers()
    assert.equal(left.length, 1)
    assert.ok(left[0]?.Id.startsWith(id))
    assert.equal(left[0]?.State, 'exited')
    await request(socket, 'DELETE', `/containers/${id}`)
  })

  await t.test('q=1: success prints only the ID; a failure writes the held output, then the error record', async () => {
    const ok = await build('?q=1', tar([{ name: 'Dockerfile', body: 'FROM busybox\nENV Q=1\n' }]))
    const recs = records(ok.text)
    assert.equal(recs.length, 2)
    assert.match((recs[1] as { stream: string }).stream, /^sha256:[0-9a-f]{64}\n$/)
    const bad = await build('?q=1&forcerm=1', tar([{ name: 'Dockerfile', body: 'FROM busybox\nRUN echo out; exit 4\n' }]))
    assert.equal(bad.status, 200)
    const text = records(bad.text).map((x) => x.stream ?? '').join('')
    assert.match(text, /^Step 1\/2 : FROM busybox\n ---> [0-9a-f]{12}\nStep 2\/2 : RUN echo out; exit 4\n ---> Running in [0-9a-f]{12}\nout\nRemoving intermediate container [0-9a-f]{12}\n$/)
    const msg = "The command '/bin/sh -c echo out; exit 4' returned a non-zero code: 4"
    assert.deepEqual(records(bad.text).pop(), { errorDetail: { code: 4, message: msg }, error: msg })
    // an error before any output is still an ordinary reply
    const parse = await build('?q=1', tar([{ name: 'Dockerfile', body: 'FROM busybox\nNOPE x\n' }]))
    assert.equal(parse.status, 400)
  })

  await t.test('/build/cancel with the build\'s buildid ends it: the RUN container is killed and removed', async () => {
    const body = tar([{ name: 'Dockerfile', body: 'FROM busybox\nRUN echo started; sleep 60\n' }])
    const text = await new Promise<string>((resolve, reject) => {
      let all = ''
      const req = http.request({ socketPath: socket, method: 'POST', path: '/v1.41/build?nocache=1&buildid=cancel-me', headers: { 'Content-Type': 'application/x-tar', 'Content-Length': body.length } }, (res) => {
        let asked = false
        res.on('data', (d: Buffer) => {
          all += d.toString()
          if (!asked && all.includes('{"stream":"started\\n"}')) {
            asked = true
            request(socket, 'POST', '/build/cancel?id=cancel-me').then((c) => { assert.equal(c.status, 200) }, reject)
          }
        })
        res.on('end', () => { resolve(all) })
      })
      req.on('error', reject)
      req.end(body)
      setTimeout(() => { req.destroy(); reject(new Error(`no end: ${all}`)) }, 30_000).unref()
    })
    assert.match(records(text).pop()?.error as string, /cancel/, text)
    assert.deepEqual(await containers(), [])
  })

  await t.test('the COPY cache key ignores mtimes; a content or mode change rebuilds', async () => {
    const ctx = (mtime: number, body: string, mode = 0o644): Buffer => tar([
      { name: 'Dockerfile', body: 'FROM busybox\nCOPY a.txt /a.txt\nCOPY d /d\n', mtime },
      { name: 'a.txt', body, mtime, mode }, { name: 'd/', type: 'dir', mtime }, { name: 'd/b.txt', body: 'b', mtime }
    ])
    assert.match((await build('?t=mt:1', ctx(1600000000, 'a'))).text, /Successfully tagged/)
    const touched = await build('?t=mt:2', ctx(1700000000, 'a'))
    assert.equal((touched.text.match(/Using cache/g) ?? []).length, 2, touched.text)
    assert.equal((await inspect('mt:2')).Id, (await inspect('mt:1')).Id)
    assert.equal(((await build('', ctx(1600000000, 'A'))).text.match(/Using cache/g) ?? []).length, 0)
    assert.equal(((await build('', ctx(1600000000, 'a', 0o600))).text.match(/Using cache/g) ?? []).length, 0)
  })

  await t.test('ADD of an archive with entries that leave the directory: refused, nothing written outside', async () => {
    const outside = tmpDir('berth-outside-')
    t.after(async () => { await cleanupDir(outside) })
    const up = '../'.repeat(12) + outside.slice(1)
    const archives: Array<[string, Buffer, RegExp]> = [
      ['dotdot', tar([{ name: `${up}/pwned`, body: 'x' }]), /path contains '\.\.'/],
      ['symlink', tar([{ name: 'lnk', type: 'symlink', linkname: outside }, { name: 'lnk/pwned', body: 'x' }]), /goes through a symlink/],
      ['relative symlink', tar([{ name: 'rel', type: 'symlink', linkname: up }, { name: 'rel/pwned', body: 'x' }]), /goes through a symlink/],
      ['hard link', tar([{ name: 'hl', type: 'link', linkname: `${up}/etc/hostname` }]), /path contains '\.\.'|leaves the directory/]
    ]
    for (const [what, archive, want] of archives) {
      const r = await build('?forcerm=1', tar([{ name: 'Dockerfile', body: 'FROM busybox\nADD evil.tar /x/\n' }, { name: 'evil.tar', body: archive }]))
      assert.match(records(r.text).pop()?.error as string ?? r.text, want, what)
      assert.deepEqual(readdirSync(outside), [], what)
    }
    assert.equal(existsSync(join(dir, 'data', 'pwned')), false)
    assert.deepEqual(readdirSync(join(dir, 'data', 'build')), [])
  })

  await t.test('variables are substituted where dockerd substitutes them, never in RUN, CMD, ENTRYPOINT, ONBUILD', async () => {
    const df = [
      '# escape=`',
      'FROM busybox',
      'ARG U=1000',
      'ENV D=/data P=8080 S=SIGINT W=/work L=lv X=xv',
      'WORKDIR $W',
      'USER ${U}:${U}',
      'EXPOSE $P/udp',
      'VOLUME $D ${D}2',
      'STOPSIGNAL $S',
      'LABEL l=$L "m"="${L:+set}" n=${NOPE:-dflt}',
      'COPY --chown=$U:$U Dockerfile $W/',
      'ENTRYPOINT ["echo", "$X"]',
      'ONBUILD RUN echo $X',
      'CMD echo $X `',
      '  and more',
      'USER 0',
      'RUN echo "$X $U" > /out',
      ''
    ].join('\n')
    const r = await build('?t=subst', tar([{ name: 'Dockerfile', body: df }]))
    assert.match(r.text, /Successfully tagged subst:latest/, r.text)
    const c = (await inspect('subst')).Config
    assert.equal(c.WorkingDir, '/work')
    assert.equal(c.User, '0')
    assert.deepEqual(c.ExposedPorts, { '8080/udp': {} })
    assert.deepEqual(c.Volumes, { '/data': {}, '/data2': {} })
    assert.equal(c.StopSignal, 'SIGINT')
    assert.deepEqual(c.Labels, { l: 'lv', m: 'set', n: 'dflt' })
    assert.deepEqual(c.Entrypoint, ['echo', '$X'])
    assert.deepEqual(c.OnBuild, ['RUN echo $X'])
    assert.deepEqual(c.Cmd, ['/bin/sh', '-c', 'echo $X   and more'])
    const hist = (await request(socket, 'GET', '/images/subst/history')).json() as Array<{ CreatedBy: string }>
    assert.equal(hist[0]?.CreatedBy, '|1 U=1000 /bin/sh -c echo "$X $U" > /out')
    assert.match(hist.map((h) => h.CreatedBy).join('\n'), /USER 1000:1000/)
    // dockerd writes no space between the --chown flag and the source hash
    assert.match(hist.map((h) => h.CreatedBy).join('\n'), /^\/bin\/sh -c #\(nop\) COPY --chown=1000:1000file:[0-9a-f]{64} in \/work\/ $/m)
    const ctr = (await request(socket, 'POST', '/containers/create', { body: { Image: 'subst', Entrypoint: ['sh', '-c'], Cmd: ['cat /out; stat -c %u:%g /work/Dockerfile'] } })).json() as { Id: string }
    await request(socket, 'POST', `/containers/${ctr.Id}/start`)
    await request(socket, 'POST', `/containers/${ctr.Id}/wait`)
    const logs = (await request(socket, 'GET', `/containers/${ctr.Id}/logs?stdout=1`)).body
    assert.match(logs.toString('latin1'), /xv 1000\n[\s\S]*1000:1000\n/)
    await request(socket, 'DELETE', `/containers/${ctr.Id}?force=1`)
    // a substitution error names its line
    const bad = await build('', tar([{ name: 'Dockerfile', body: 'FROM busybox\nENV A=1\nWORKDIR ${NOPE:?is not set}\n' }]))
    assert.match(records(bad.text).pop()?.error as string ?? (bad.json() as { message: string }).message, /line 3: NOPE: is not set/, bad.text)
  })
})
