// Issue 21 point 1: a build context never writes outside the layer it builds. Symlinks in the context (or made by an
// earlier source of the same COPY, or by a stage, or by an earlier archive of the same ADD) point at a directory of
// the host; a later entry below them used to be written through them, as root. Each attack runs as the review ran
// it (the docker CLI with the classic builder, the raw API with a crafted tar, in memory and past the 16 MiB on-disk
// threshold); the host directory must stay untouched and the image must hold what dockerd's classic builder leaves:
// a later source replaces what an earlier one put at a path (a directory replaced by a symlink takes its contents
// along), and a context entry below a context symlink lands where the link leads inside the context, or fails when
// that is not there.
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { chmodSync, chownSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, hasDockerCli, importBusybox, tmpDir, dockerCli, request } from '../helpers/engine.js'
import { makeTar } from '../helpers/tar.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')
const CLASSIC = { DOCKER_BUILDKIT: '0' }

/** The build's JSON records: its error, if any, and the text. */
function buildOutcome (text: string): { error: string | undefined, stream: string } {
  let error: string | undefined
  let stream = ''
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue
    const r = JSON.parse(line) as { error?: string, stream?: string }
    if (r.error !== undefined) error = r.error
    if (r.stream !== undefined) stream += r.stream
  }
  return { error, stream }
}

/** A test engine with busybox, a scratch directory, and in it `host`: the host directory the links point at. */
async function setup (t: TestContext): Promise<{ socket: string, dir: string, host: string }> {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const dir = tmpDir('berth-sec-build-')
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  const host = join(dir, 'host')
  mkdirSync(host)
  return { socket, dir, host }
}

test('docker build: context, stage and archive symlinks never carry a later source out of the layer', { skip: skip ?? false }, async (t) => {
  const { socket, dir, host } = await setup(t)
  const ctx = join(dir, 'ctx')
  mkdirSync(join(ctx, 'a'), { recursive: true })
  mkdirSync(join(ctx, 'b', 'x'), { recursive: true })
  symlinkSync(host, join(ctx, 'a', 'x'))
  writeFileSync(join(ctx, 'b', 'x', 'f'), 'hi\n')
  writeFileSync(join(ctx, 'one.tar'), makeTar([{ name: 'x', type: 'symlink', linkname: host }]))
  writeFileSync(join(ctx, 'two.tar'), makeTar([{ name: 'x/evil', body: 'pwned\n' }]))
  writeFileSync(join(ctx, 'three.tar'), makeTar([{ name: 'x', type: 'dir' }, { name: 'x/evil', body: 'contained\n' }]))
  writeFileSync(join(ctx, 'Dockerfile'), [
    'FROM busybox AS src',
    'COPY a/ /s/a/',
    'COPY b/ /s/b/',
    'FROM busybox',
    // the review's reproduction: b's x/f first, then a's x -> host replaces the directory
    'COPY b/ a/ /dest/',
    'COPY a/ b/ /rev/',
    'COPY --from=src /s/b/ /s/a/ /stage/',
    'COPY --from=src /s/a/ /s/b/ /stage-rev/',
    // a directory entry of the second archive replaces the first one's link
    'ADD one.tar three.tar /tars/',
    ''
  ].join('\n'))
  const built = await dockerCli(socket, ['build', '-q', '-t', 'links', ctx], undefined, CLASSIC)
  assert.equal(built.status, 0, built.stderr)
  assert.deepEqual(readdirSync(host), [], 'nothing was written into the host directory')
  const show = await dockerCli(socket, ['run', '--rm', 'links', 'sh', '-c',
    'for p in /dest/x /rev/x /stage/x /stage-rev/x /tars/x; do if [ -L $p ]; then echo "$p -> $(readlink $p)"; else echo "$p: $(ls -A $p | tr "\\n" " ")"; fi; done; cat /rev/x/f /stage-rev/x/f /tars/x/evil'])
  assert.equal(show.status, 0, show.stderr)
  assert.equal(show.stdout, [
    `/dest/x -> ${host}`,
    '/rev/x: f ',
    `/stage/x -> ${host}`,
    '/stage-rev/x: f ',
    '/tars/x: evil ',
    'hi', 'hi', 'contained', ''
  ].join('\n'))
  // an archive entry below that link, with no directory entry of its own, follows it inside the layer (dockerd's
  // unpack): the host directory is not there, so the step fails as dockerd's does
  writeFileSync(join(ctx, 'Dockerfile'), 'FROM busybox\nADD one.tar two.tar /tars/\n')
  const failed = await dockerCli(socket, ['build', '-q', ctx], undefined, CLASSIC)
  assert.notEqual(failed.status, 0)
  assert.match(failed.stderr, /failed to copy files: open \/tars\/x\/evil: no such file or directory/)
  assert.deepEqual(readdirSync(host), [])
  // a glob of COPY --from lists a directory where its path leads inside the stage: never the host's names
  writeFileSync(join(host, 'host-secret-name'), '')
  writeFileSync(join(ctx, 'Dockerfile'), 'FROM busybox AS src\nCOPY a/ /s/a/\nFROM busybox\nCOPY --from=src /s/a/x/* /g/\n')
  const globbed = await dockerCli(socket, ['build', '-q', ctx], undefined, CLASSIC)
  assert.notEqual(globbed.status, 0)
  assert.match(globbed.stderr, /COPY failed: no source files were specified/)
  assert.doesNotMatch(globbed.stderr, /host-secret-name/)
})

test('docker build - < ctx.tar: an entry below a context symlink lands inside the context or fails', { skip: skip ?? false }, async (t) => {
  const { socket, host } = await setup(t)
  // the review's form: d -> a host directory, then d/evil
  const attack = makeTar([
    { name: 'Dockerfile', body: 'FROM busybox\nCOPY . /x/\n' },
    { name: 'd', type: 'symlink', linkname: host },
    { name: 'd/evil', body: 'pwned\n' }
  ])
  const refused = await dockerCli(socket, ['build', '-t', 'tarlinks', '-'], attack, CLASSIC)
  assert.notEqual(refused.status, 0)
  // dockerd's classic builder unpacks the context inside it: the link's target is not there
  assert.match(refused.stderr, /Error processing tar file: open \/d\/evil: no such file or directory/)
  assert.deepEqual(readdirSync(host), [])
  // what lands inside the context is kept where dockerd puts it; a later entry replaces an earlier one
  const inScope = makeTar([
    { name: 'Dockerfile', body: 'FROM busybox\nCOPY . /x/\n' },
    { name: 'inner', type: 'dir' },
    { name: 'd', type: 'symlink', linkname: '/inner' },
    { name: 'd/evil', body: 'inside\n' },
    { name: 'up', type: 'symlink', linkname: '../../..' },
    { name: 'up/top', body: 'top\n' },
    { name: 'e/f/g', body: 'deep\n' },
    { name: 'e', type: 'symlink', linkname: 'inner' },
    { name: 'z', type: 'dir' },
    { name: 'z/zz', body: 'zz\n' },
    { name: 'z', body: 'now a file\n' },
    { name: 'h', type: 'symlink', linkname: host },
    { name: 'h', type: 'dir' },
    { name: 'h/f', body: 'in the image\n' }
  ])
  const ok = await dockerCli(socket, ['build', '-q', '-t', 'tarlinks', '-'], inScope, CLASSIC)
  assert.equal(ok.status, 0, ok.stderr)
  assert.deepEqual(readdirSync(host), [])
  const show = await dockerCli(socket, ['run', '--rm', 'tarlinks', 'sh', '-c', 'cd /x && find . | sort && cat inner/evil top z h/f && for l in d e up; do readlink $l; done'])
  assert.equal(show.status, 0, show.stderr)
  assert.equal(show.stdout, ['.', './Dockerfile', './d', './e', './h', './h/f', './inner', './inner/evil', './top', './up', './z',
    'inside', 'top', 'now a file', 'in the image', '/inner', 'inner', '../../..', ''].join('\n'))
})

test('POST /build with a crafted tar: a later symlink at an earlier directory\'s path, in memory and on disk', { skip: skip ?? false }, async (t) => {
  const { socket, host } = await setup(t)
  writeFileSync(join(host, 'evil'), 'original\n')
  // a context that cannot be unpacked is refused before the build starts (dockerd answers that way too)
  const build = async (tag: string, body: Buffer): Promise<{ error: string | undefined, stream: string }> => {
    const r = await request(socket, 'POST', `/build?t=${tag}&rm=1`, { raw: body, headers: { 'Content-Type': 'application/x-tar' } })
    if (r.status === 400) return { error: (r.json() as { message: string }).message, stream: '' }
    assert.equal(r.status, 200, r.text)
    return buildOutcome(r.text)
  }
  // a directory and its file, then a symlink at the directory's path (the index kept the link at the directory's place)
  const replaced = await build('later-link', makeTar([
    { name: 'Dockerfile', body: 'FROM busybox\nCOPY . /x/\n' },
    { name: 'x', type: 'dir' },
    { name: 'x/evil', body: 'pwned\n' },
    { name: 'x', type: 'symlink', linkname: host }
  ]))
  assert.equal(replaced.error, undefined, replaced.stream)
  assert.equal(readFileSync(join(host, 'evil'), 'utf8'), 'original\n')
  const show = await dockerCli(socket, ['run', '--rm', 'later-link', 'sh', '-c', 'ls -A /x | tr "\\n" " "; readlink /x/x'])
  assert.equal(show.stdout, `Dockerfile x ${host}\n`, show.stderr)
  // past IN_MEMORY_CONTEXT the context is read from its file, PARALLEL files at a time: the link lands in an earlier
  // batch than the file below it (names between `d` and `d/` in byte order)
  const big = makeTar([
    { name: 'Dockerfile', body: 'FROM busybox\nCOPY . /x/\n' },
    { name: 'big.bin', body: Buffer.alloc(17 * 1024 * 1024) },
    { name: 'd', type: 'symlink', linkname: host },
    ...Array.from({ length: 40 }, (_, i) => ({ name: `d-${String(i).padStart(2, '0')}`, body: 'x' })),
    { name: 'd/evil', body: 'pwned\n' }
  ])
  const onDisk = await build('on-disk', big)
  assert.match(onDisk.error ?? '', /Error processing tar file: open \/d\/evil: no such file or directory/)
  assert.equal(readFileSync(join(host, 'evil'), 'utf8'), 'original\n')
  assert.deepEqual(readdirSync(host), ['evil'])
})

test('a COPY destination below a link of a lower layer takes nothing from the host (its directories are looked up layer by layer)', { skip: skip ?? false }, async (t) => {
  const { socket, dir, host } = await setup(t)
  // a directory of the host whose mode and owner would show in the image if the lookup went through the link
  mkdirSync(join(host, 'b'))
  chmodSync(join(host, 'b'), 0o711)
  chownSync(join(host, 'b'), 4321, 4321)
  const ctx = join(dir, 'ctx')
  mkdirSync(ctx)
  writeFileSync(join(ctx, 'f'), 'f\n')
  writeFileSync(join(ctx, 'Dockerfile'), `FROM busybox\nRUN ln -s ${host} /a\nRUN rm /a && mkdir /a\nCOPY f /a/b/\n`)
  const built = await dockerCli(socket, ['build', '-q', '-t', 'lower-link', ctx], undefined, CLASSIC)
  assert.equal(built.status, 0, built.stderr)
  const show = await dockerCli(socket, ['run', '--rm', 'lower-link', 'stat', '-c', '%a %u:%g', '/a/b'])
  assert.equal(show.stdout, '755 0:0\n', show.stderr)
})
