// What the classic builder sees of the context besides the files (issue 23 point 14), with the docker CLI and
// docker-py as dockerd 20.10 answers them: a .dockerignore that lists the Dockerfile or itself removes them from what
// COPY sees (dockerd's removeDockerfile); a Dockerfile outside the context (which both clients send inside the tar
// under a generated `.dockerfile.<hex>` name, listed in a .dockerignore they write or extend) builds, and COPY . sees
// neither that file nor a .dockerignore the client made up; --cache-from / cache_from restricts the cache to those
// images and their parents (none at all when it names nothing local).
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync, mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, importBusybox, tmpDir, dockerCli, hasDockerCli } from '../helpers/engine.js'
import { runTool, dockerPySkipReason } from '../helpers/tools.js'

const skip = containerSkipReason()
const cliSkip = skip ?? (hasDockerCli() ? null : 'the docker CLI is not installed')
const pySkip = skip ?? dockerPySkipReason()
const CLASSIC = { DOCKER_BUILDKIT: '0' }

/** Three contexts and a Dockerfile outside them: `listed` ignores its Dockerfile and itself, `other` ignores *.tmp. */
function contexts (dir: string): { listed: string, other: string, bare: string, outside: string } {
  const listed = join(dir, 'listed')
  const other = join(dir, 'other')
  const bare = join(dir, 'bare')
  for (const d of [listed, other, bare]) mkdirSync(d)
  writeFileSync(join(listed, 'a.txt'), 'a\n')
  writeFileSync(join(listed, '.dockerignore'), 'Dockerfile\n.dockerignore\n')
  writeFileSync(join(listed, 'Dockerfile'), 'FROM busybox\nCOPY . /x/\nCMD ["ls", "-A", "/x"]\n')
  writeFileSync(join(other, 'b.txt'), 'b\n')
  writeFileSync(join(other, 'z.tmp'), 'tmp\n')
  writeFileSync(join(other, '.dockerignore'), '*.tmp\n')
  writeFileSync(join(bare, 'c.txt'), 'c\n')
  const outside = join(dir, 'Dockerfile.outside')
  writeFileSync(outside, 'FROM busybox\nCOPY . /y/\nCMD ["ls", "-A", "/y"]\n')
  return { listed, other, bare, outside }
}

/** The lines of `ls -A` in a run of `image`. */
async function listing (socket: string, image: string): Promise<string[]> {
  const r = await dockerCli(socket, ['run', '--rm', image])
  assert.equal(r.status, 0, r.stderr)
  return r.stdout.trim().split('\n')
}

/** A test engine with busybox and the contexts in a scratch directory. */
async function setup (t: TestContext): Promise<{ socket: string, dir: string, c: ReturnType<typeof contexts> }> {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const dir = tmpDir('berth-ctxfiles-')
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  return { socket, dir, c: contexts(dir) }
}

function usedCache (out: string): number { return (out.match(/Using cache/g) ?? []).length }

test('docker build (classic): .dockerignore listing the Dockerfile, a Dockerfile outside the context, --cache-from', { skip: cliSkip ?? false }, async (t) => {
  const { socket, dir, c } = await setup(t)
  const build = async (...args: string[]): Promise<string> => {
    const r = await dockerCli(socket, ['build', ...args], undefined, CLASSIC)
    assert.equal(r.status, 0, r.stderr)
    return r.stdout
  }
  await build('-t', 'cf:listed', c.listed)
  assert.deepEqual(await listing(socket, 'cf:listed'), ['a.txt'])
  // the CLI appends `.dockerfile.<hex>` to the context's own .dockerignore (which does not list itself: it stays)
  await build('-t', 'cf:other', '-f', c.outside, c.other)
  assert.deepEqual(await listing(socket, 'cf:other'), ['.dockerignore', 'b.txt'])
  // without a .dockerignore the CLI writes one listing itself and the generated name: neither is seen
  await build('-t', 'cf:bare', '-f', c.outside, c.bare)
  assert.deepEqual(await listing(socket, 'cf:bare'), ['c.txt'])

  // the cache: used as usual, not at all with --cache-from naming an unrelated or a missing image, fully with the
  // image itself (its intermediate images are its parents)
  assert.equal(usedCache(await build('-t', 'cf:again', c.listed)), 2)
  assert.equal(usedCache(await build('--cache-from', 'busybox', c.listed)), 0)
  assert.equal(usedCache(await build('--cache-from', 'no/such:image', c.listed)), 0)
  assert.equal(usedCache(await build('--cache-from', 'cf:listed', c.listed)), 2)
  // a loaded image has no intermediate images: its history serves as the cache (and the result is that image)
  const saved = join(dir, 'saved.tar')
  assert.equal((await dockerCli(socket, ['save', '-o', saved, 'cf:bare'])).status, 0)
  assert.equal((await dockerCli(socket, ['rmi', 'cf:bare'])).status, 0)
  assert.equal((await dockerCli(socket, ['builder', 'prune', '-f'])).status, 0)
  assert.equal((await dockerCli(socket, ['load', '-i', saved])).status, 0)
  assert.equal(usedCache(await build('-f', c.outside, c.bare)), 0)
  const restored = await build('--cache-from', 'cf:bare', '-f', c.outside, '-t', 'cf:restored', c.bare)
  assert.equal(usedCache(restored), 2, restored)
  const id = async (ref: string): Promise<string> => (await dockerCli(socket, ['image', 'inspect', '-f', '{{.Id}}', ref])).stdout.trim()
  assert.equal(await id('cf:restored'), await id('cf:bare'))
})

test('docker-py: .dockerignore listing the Dockerfile, dockerfile= outside the context, cache_from', { skip: pySkip ?? false }, async (t) => {
  const { socket, c } = await setup(t)
  const script = `
import docker
c = docker.DockerClient(base_url='unix://${socket}')
def ls(image):
    return c.containers.run(image, remove=True).decode().split()
def cached(logs):
    return ''.join(l.get('stream', '') for l in logs).count('Using cache')
c.images.build(path='${c.listed}', tag='py:listed')
assert ls('py:listed') == ['a.txt'], ls('py:listed')
# docker-py puts the Dockerfile in the tar as .dockerfile.<hex> and writes a .dockerignore of the excludes and that name
c.images.build(path='${c.other}', dockerfile='${c.outside}', tag='py:other')
assert ls('py:other') == ['.dockerignore', 'b.txt'], ls('py:other')
c.images.build(path='${c.bare}', dockerfile='${c.outside}', tag='py:bare')
assert ls('py:bare') == ['c.txt'], ls('py:bare')
assert cached(c.images.build(path='${c.listed}')[1]) == 2
assert cached(c.images.build(path='${c.listed}', cache_from=['busybox'])[1]) == 0
assert cached(c.images.build(path='${c.listed}', cache_from=['py:listed'])[1]) == 2
print('ok')
`
  const r = await runTool('python3', ['-c', script])
  assert.equal(r.status, 0, r.out)
  assert.equal(r.out.trim(), 'ok')
})
