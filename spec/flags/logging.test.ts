// Log drivers with the real docker CLI: none keeps no log (attach still streams), json-file/local rotate at
// max-size keeping max-file files and reads (plain and follow) go across the rotated files; dockerd's errors.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar } from '../helpers/engine.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')

function numbers (out: string): number[] {
  return out.split('\n').filter((l) => l !== '').map((l) => Number(/^line-(\d+)-/.exec(l)?.[1] ?? NaN))
}

test('log drivers', { skip: skip ?? false }, async (t) => {
  const { socket, dataRoot } = await startEngine(t)
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  assert.equal((await docker('import', busyboxTar(), 'busybox:latest')).status, 0)

  await t.test('--log-driver none: attach streams, nothing is kept, docker logs answers dockerd\'s error', async () => {
    const r = await docker('run', '--name', 'quiet', '--log-driver', 'none', 'busybox', 'echo', 'hi')
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout, 'hi\n')
    const logs = await docker('logs', 'quiet')
    assert.notEqual(logs.status, 0)
    assert.match(logs.stderr, /configured logging driver does not support reading/)
    const id = (await docker('inspect', '-f', '{{.Id}}', 'quiet')).stdout.trim()
    const file = join(dataRoot, 'containers', id, 'container.log')
    for (let i = 0; i < 50 && existsSync(file) && statSync(file).size > 0; i++) await new Promise((resolve) => setTimeout(resolve, 100))
    assert.ok(!existsSync(file) || statSync(file).size === 0, 'a none container keeps no log')
    await docker('rm', 'quiet')
  })

  await t.test('unknown drivers and options get dockerd\'s errors', async () => {
    const bad = await docker('create', '--log-driver', 'nosuch', 'busybox', 'true')
    assert.notEqual(bad.status, 0)
    assert.match(bad.stderr, /logger: no log driver named 'nosuch' is registered/)
    const opt = await docker('create', '--log-opt', 'bogus=1', 'busybox', 'true')
    assert.match(opt.stderr, /unknown log opt 'bogus' for json-file log driver/)
    const size = await docker('create', '--log-opt', 'max-size=lots', 'busybox', 'true')
    assert.match(size.stderr, /invalid size: 'lots'/)
    const files = await docker('create', '--log-opt', 'max-file=0', '--log-opt', 'max-size=1k', 'busybox', 'true')
    assert.match(files.stderr, /max-file cannot be less than 1/)
  })

  await t.test('json-file max-file without max-size is accepted as dockerd accepts it (the log never rotates)', async () => {
    const id = (await docker('run', '-d', '--log-opt', 'max-file=3', 'busybox', 'sh', '-c', 'seq 1 300')).stdout.trim()
    assert.match(id, /^[0-9a-f]{64}$/)
    assert.equal((await docker('wait', id)).stdout, '0\n')
    assert.equal((await docker('logs', id)).stdout.split('\n').length, 301)
    assert.ok(!existsSync(join(dataRoot, 'containers', id, 'container.log.1')), 'not rotated')
    await docker('rm', id)
  })

  await t.test('json-file max-size/max-file rotate; logs and logs -f read across the files', async () => {
    const script = 'for i in $(seq 1 80); do echo line-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; usleep 5000; done'
    const id = (await docker('run', '-d', '--log-opt', 'max-size=1k', '--log-opt', 'max-file=3', 'busybox', 'sh', '-c', script)).stdout.trim()
    const follow = await docker('logs', '-f', id)
    assert.equal((await docker('wait', id)).stdout, '0\n')
    const dir = join(dataRoot, 'containers', id)
    assert.ok(existsSync(join(dir, 'container.log.1')) && existsSync(join(dir, 'container.log.2')), 'rotated files')
    assert.ok(!existsSync(join(dir, 'container.log.3')), 'at most max-file files')
    for (const f of ['container.log', 'container.log.1', 'container.log.2']) assert.ok(statSync(join(dir, f)).size <= 1024 + 16 + 4096, f)
    const kept = numbers((await docker('logs', id)).stdout)
    assert.ok(kept.length > 0 && kept.length < 80, `kept ${kept.length} lines`)
    assert.deepEqual(kept, kept.map((_, i) => 80 - kept.length + 1 + i), 'the newest lines, in order, none missing')
    const followed = numbers(follow.stdout)
    assert.equal(followed[followed.length - 1], 80)
    // a follower that falls more than max-file files behind (a loaded machine) loses what was rotated away meanwhile,
    // as with dockerd: only order and the end are certain
    assert.ok(followed.every((n, i) => i === 0 || n > (followed[i - 1] as number)), 'follow reads in order')
    const tail = numbers((await docker('logs', '--tail', '3', id)).stdout)
    assert.deepEqual(tail, [78, 79, 80])
    await docker('rm', id)
  })

  await t.test('local driver: logs kept and read', async () => {
    const r = await docker('run', '--name', 'loc', '--log-driver', 'local', 'busybox', 'echo', 'kept')
    assert.equal(r.stdout, 'kept\n')
    assert.equal((await docker('logs', 'loc')).stdout, 'kept\n')
    await docker('rm', 'loc')
  })

  await t.test('logs --details: each line after its attributes (labels, env, their patterns, tag), as dockerd prints them', async () => {
    const plain = await docker('run', '--name', 'det0', 'busybox', 'echo', 'bare')
    assert.equal(plain.status, 0, plain.stderr)
    // no attributes: dockerd still puts the separating space
    assert.equal((await docker('logs', '--details', 'det0')).stdout, ' bare\n')
    const r = await docker('run', '--name', 'det1', '--label', 'a=b', '--label', 'com.x=e,f', '--label', 'other=no',
      '-e', 'FOO=bar baz', '-e', 'LEFT=out', '--log-opt', 'labels=a,missing', '--log-opt', 'labels-regex=^com\\.',
      '--log-opt', 'env=FOO', '--log-opt', 'tag={{.Name}}/{{.ImageName}}/{{ .ID }}', 'busybox', 'sh', '-c', 'echo out; echo err >&2')
    assert.equal(r.status, 0, r.stderr)
    assert.doesNotMatch(r.stderr, /WARNING/, 'the options are applied, not warned about')
    const id = (await docker('inspect', '-f', '{{.Id}}', 'det1')).stdout.trim()
    const attrs = `FOO=bar+baz,a=b,com.x=e%2Cf,tag=det1%2Fbusybox%2F${id.slice(0, 12)}`
    const logs = await docker('logs', '--details', 'det1')
    assert.equal(logs.stdout, `${attrs} out\n`)
    assert.equal(logs.stderr, `${attrs} err\n`)
    const stamped = await docker('logs', '--details', '--timestamps', '--tail', '1', 'det1')
    assert.match(stamped.stderr, new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z ${attrs.replace(/[.+]/g, '\\$&')} err\n$`))
    assert.equal((await docker('logs', 'det1')).stdout, 'out\n', 'without details, the lines alone')
    const local = await docker('run', '--name', 'det2', '--log-driver', 'local', '--log-opt', 'tag=plain', 'busybox', 'echo', 'kept')
    assert.equal(local.status, 0, local.stderr)
    assert.equal((await docker('logs', '--details', 'det2')).stdout, 'tag=plain kept\n')
    // what would fail at each read is refused at create
    const re = await docker('create', '--log-opt', 'env-regex=(', 'busybox', 'true')
    assert.match(re.stderr, /log-opt env-regex: error parsing regexp: missing closing \)/)
    const tag = await docker('create', '--log-opt', 'tag={{json .}}', 'busybox', 'true')
    assert.match(tag.stderr, /log-opt tag: \{\{json \.\}\} is not a field/)
    await docker('rm', 'det0', 'det1', 'det2')
  })
})
