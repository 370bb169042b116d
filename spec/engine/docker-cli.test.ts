// The real docker CLI against the engine: the commands the issue lists.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync, readFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar, request } from '../helpers/engine.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')

test('docker CLI', { skip: skip ?? false }, async (t) => {
  const { socket, dir } = await startEngine(t)
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)

  await t.test('import, images, tag, inspect', async () => {
    const imp = await docker('import', busyboxTar(), 'busybox:latest')
    assert.equal(imp.status, 0, imp.stderr)
    assert.match(imp.stdout, /^sha256:[0-9a-f]{64}\n$/)
    const images = await docker('images')
    assert.match(images.stdout, /busybox\s+latest\s+[0-9a-f]{12}\s/)
    assert.equal((await docker('tag', 'busybox', 'mybox:1')).status, 0)
    assert.match((await docker('images', '--format', '{{.Repository}}:{{.Tag}}')).stdout, /mybox:1/)
    const insp = JSON.parse((await docker('image', 'inspect', 'mybox:1')).stdout) as Array<{ RepoTags: string[] }>
    assert.deepEqual(insp[0]?.RepoTags.sort(), ['busybox:latest', 'mybox:1'])
  })

  await t.test('run --rm echo, exit codes, -i with piped stdin, -d + logs + ps + stop -t 0', async () => {
    const r = await docker('run', '--rm', 'busybox', 'echo', 'hi')
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout, 'hi\n')
    assert.equal((await docker('run', '--rm', 'busybox', 'sh', '-c', 'exit 3')).status, 3)
    const missing = await docker('run', '--rm', 'busybox', '/nope')
    assert.equal(missing.status, 127)
    const cat = await dockerCli(socket, ['run', '--rm', '-i', 'busybox', 'cat'], 'from stdin\n')
    assert.equal(cat.stdout, 'from stdin\n', cat.stderr)
    const d = await docker('run', '-d', '--name', 'bg', 'busybox', 'sh', '-c', 'echo started; sleep 60')
    assert.equal(d.status, 0, d.stderr)
    assert.match(d.stdout, /^[0-9a-f]{64}\n$/)
    assert.match((await docker('ps')).stdout, /\bbg\n/)
    for (let i = 0; i < 50 && !(await docker('logs', 'bg')).stdout.includes('started'); i++) { /* poll until the shell ran */ }
    assert.equal((await docker('logs', 'bg')).stdout, 'started\n')
    assert.equal((await docker('top', 'bg')).status, 0)
    assert.equal((await docker('pause', 'bg')).status, 0)
    assert.match((await docker('ps')).stdout, /\(Paused\)/)
    assert.equal((await docker('unpause', 'bg')).status, 0)
    const stop = await docker('stop', '-t', '0', 'bg')
    assert.equal(stop.status, 0, stop.stderr)
    assert.equal(stop.stdout, 'bg\n')
    assert.equal((await docker('wait', 'bg')).stdout, '137\n')
    assert.match((await docker('ps', '-a')).stdout, /Exited \(137\)/)
    assert.equal((await docker('restart', '-t', '0', 'bg')).status, 0)
    assert.equal((await docker('kill', 'bg')).status, 0)
    assert.equal((await docker('rm', 'bg')).status, 0)
    assert.doesNotMatch((await docker('ps', '-a')).stdout, /\bbg\n/)
  })

  await t.test('logs -f ends when the container stops; inspect; exec; rm -f', async () => {
    const id = (await docker('run', '-d', 'busybox', 'sh', '-c', 'for i in 1 2 3; do echo n$i; sleep 0.1; done')).stdout.trim()
    const f = await docker('logs', '-f', id)
    assert.equal(f.stdout, 'n1\nn2\nn3\n')
    const insp = JSON.parse((await docker('inspect', id)).stdout) as Array<{ State: { Status: string } }>
    assert.equal(insp[0]?.State.Status, 'exited')
    const s = await docker('run', '-d', '--name', 'ex', 'busybox', 'sleep', '60')
    assert.equal(s.status, 0)
    const e = await docker('exec', 'ex', 'sh', '-c', 'echo inside; exit 2')
    assert.equal(e.stdout, 'inside\n')
    assert.equal(e.status, 2)
    assert.equal((await dockerCli(socket, ['exec', '-i', 'ex', 'cat'], 'piped\n')).stdout, 'piped\n')
    assert.equal((await docker('rm', '-f', 'ex')).status, 0)
  })

  await t.test('cp into and out of a container', async () => {
    const r = await docker('create', '--name', 'cpx', 'busybox', 'true')
    assert.equal(r.status, 0, r.stderr)
    const src = join(dir, 'cp-src')
    mkdirSync(src)
    writeFileSync(join(src, 'hello.txt'), 'hello cp\n')
    const into = await docker('cp', join(src, 'hello.txt'), 'cpx:/tmp/hello.txt')
    assert.equal(into.status, 0, into.stderr)
    const out = join(dir, 'cp-out')
    assert.equal((await docker('cp', 'cpx:/tmp/hello.txt', out)).status, 0)
    assert.equal(readFileSync(out, 'utf8'), 'hello cp\n')
    await docker('rm', 'cpx')
  })

  await t.test('rmi with conflicts, then success', async () => {
    await docker('run', '--name', 'user1', 'mybox:1', 'true')
    assert.equal((await docker('rmi', 'busybox')).status, 0, 'one of two tags can go')
    const conflict = await docker('rmi', 'mybox:1')
    assert.notEqual(conflict.status, 0)
    assert.match(conflict.stderr, /must force/)
    await docker('rm', 'user1')
    const left = (await docker('ps', '-aq')).stdout.split('\n').filter((x) => x !== '')
    if (left.length > 0) await docker('rm', '-f', ...left)
    const ok = await docker('rmi', 'mybox:1')
    assert.equal(ok.status, 0, ok.stderr)
    assert.match(ok.stdout, /Untagged: mybox:1\nDeleted: sha256:/)
  })

  await t.test('--platform: an image of another platform is not taken for it; with none asked for, a warning', async () => {
    const imp = await docker('import', '--platform', 'linux/arm64', busyboxTar(), 'armbox:1')
    assert.equal(imp.status, 0, imp.stderr)
    assert.equal((await docker('image', 'inspect', 'armbox:1', '--format', '{{.Os}}/{{.Architecture}}')).stdout, 'linux/arm64\n')
    // dockerd's not-found (a client then pulls the image for that platform; --pull never stops there)
    const other = await docker('create', '--pull', 'never', '--platform', 'linux/amd64', 'armbox:1', 'true')
    assert.notEqual(other.status, 0)
    assert.match(other.stderr, /image with reference armbox:1 was found but its platform \(linux\/arm64\) does not match the specified platform \(linux\/amd64\)/)
    const same = await docker('run', '--rm', '--pull', 'never', '--platform', 'linux/arm64', 'armbox:1', 'echo', 'asked')
    assert.equal(same.status, 0, same.stderr)
    assert.equal(same.stdout, 'asked\n')
    assert.doesNotMatch(same.stderr, /WARNING/)
    const none = await docker('run', '--rm', '--pull', 'never', 'armbox:1', 'echo', 'not asked')
    assert.equal(none.status, 0, none.stderr)
    assert.equal(none.stdout, 'not asked\n')
    assert.match(none.stderr, /WARNING: The requested image's platform \(linux\/arm64\) does not match the detected host platform \(linux\/amd64\) and no specific platform was requested/)
    // API 1.41 brought platform=; before it the parameter is not read, as dockerd's; a malformed one is a 400
    const create = async (v: string, platform: string): Promise<{ status: number, body: { message?: string, Warnings?: string[] } }> => {
      const r = await request(socket, 'POST', `/${v}/containers/create?platform=${encodeURIComponent(platform)}`, { body: { Image: 'armbox:1', Cmd: ['true'] } })
      return { status: r.status, body: r.json() as { message?: string, Warnings?: string[] } }
    }
    assert.equal((await create('v1.41', 'linux/amd64')).status, 404)
    const old = await create('v1.40', 'linux/amd64')
    assert.equal(old.status, 201)
    assert.equal(old.body.Warnings?.length, 1)
    const bad = await create('v1.41', 'linux//x')
    assert.equal(bad.status, 400)
    assert.equal(bad.body.message, '"linux//x": unknown operating system or architecture: invalid argument')
    const left = (await docker('ps', '-aq')).stdout.split('\n').filter((x) => x !== '')
    if (left.length > 0) await docker('rm', '-f', ...left)
    assert.equal((await docker('rmi', 'armbox:1')).status, 0)
  })

  await t.test('images shared-size=1 (API 1.42+): what each image has in common with the others, as system df says', async () => {
    assert.equal((await docker('import', busyboxTar(), 'sharebase:1')).status, 0)
    assert.equal((await docker('run', '--name', 'sharer', 'sharebase:1', 'sh', '-c', 'echo x > /added')).status, 0)
    assert.equal((await docker('commit', 'sharer', 'sharechild:1')).status, 0)
    assert.equal((await docker('rm', 'sharer')).status, 0)
    type Summary = { RepoTags: string[], SharedSize: number, Size: number }
    const list = async (path: string): Promise<Map<string, Summary>> => {
      const r = await request(socket, 'GET', path)
      assert.equal(r.status, 200, r.text)
      return new Map((r.json() as Summary[]).flatMap((i) => i.RepoTags.map((tag) => [tag, i] as [string, Summary])))
    }
    const shared = await list('/v1.42/images/json?shared-size=1')
    const base = shared.get('sharebase:1')
    const child = shared.get('sharechild:1')
    assert.ok(base !== undefined && child !== undefined)
    assert.ok(base.SharedSize > 0, 'the base layer is the child\'s too')
    assert.equal(child.SharedSize, base.SharedSize)
    assert.ok(child.Size > child.SharedSize, 'the child\'s own layer is not shared')
    const df = (await request(socket, 'GET', '/v1.42/system/df?type=image')).json() as { Images: Summary[] }
    for (const img of df.Images) {
      for (const tag of img.RepoTags) assert.equal(shared.get(tag)?.SharedSize, img.SharedSize, `system df and the list agree on ${tag}`)
    }
    // not asked for, or before API 1.42: not computed (-1), as dockerd
    assert.equal((await list('/v1.42/images/json')).get('sharebase:1')?.SharedSize, -1)
    assert.equal((await list('/v1.41/images/json?shared-size=1')).get('sharebase:1')?.SharedSize, -1)
    assert.equal((await docker('rmi', 'sharechild:1', 'sharebase:1')).status, 0)
  })

  await t.test('version and info', async () => {
    const v = await docker('version', '--format', '{{.Server.APIVersion}}')
    assert.equal(v.stdout.trim(), '1.50')
    const i = await docker('info', '--format', '{{.OSType}} {{.Containers}}')
    assert.equal(i.status, 0, i.stderr)
    assert.match(i.stdout, /^linux \d+/)
  })
})
