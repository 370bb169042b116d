// docker build with the real CLI (classic builder, explicitly and as the default fallback): a multi-stage Dockerfile
// with every instruction, the built image's config and history, the layer cache, .dockerignore exceptions,
// builder prune and system df.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'
import { startEngine, containerSkipReason, hasDockerCli, importBusybox, tmpDir } from '../helpers/engine.js'
import { runTool, type ToolResult } from '../helpers/tools.js'
import { makeTar } from '../helpers/tar.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')

type Run = ToolResult

async function docker (socket: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return await runTool('docker', args, { env: { ...process.env, DOCKER_HOST: `unix://${socket}`, ...env } })
}

/** `Step n/m : text` → whether that step printed `Using cache`. */
function cacheByStep (output: string): Map<string, boolean> {
  const steps = new Map<string, boolean>()
  let current = ''
  for (const line of output.split('\n')) {
    const m = /^Step \d+\/\d+ : (.*)$/.exec(line)
    if (m !== null) { current = m[1] as string; steps.set(current, false); continue }
    if (line === ' ---> Using cache') steps.set(current, true)
  }
  return steps
}

const DOCKERFILE = `# syntax=docker/dockerfile:1
# a comment before the first instruction
ARG BASE=busybox
FROM \${BASE} AS builder
MAINTAINER Berth Tests <tests@example.com>
ARG GREETING=hello
ENV APP_HOME=/app \\
    MODE="two words"
WORKDIR $APP_HOME
COPY --chown=1000:1000 --chmod=640 src/ ./src/
ADD archive.tar /unpacked/
COPY . /ctx/
RUN echo "$GREETING from $MODE" > /app/out.txt && cat src/a.txt && test ! -e /ctx/debug.log && test -f /ctx/keep.log
SHELL ["/bin/sh", "-ec"]
RUN test -f /unpacked/inner.txt; stat -c '%u:%g %a' /app/src/a.txt > /app/owner.txt

from busybox
LABEL org.example.name="berth test" version=1
COPY --from=builder /app/out.txt /app/owner.txt /
COPY --from=builder /unpacked/inner.txt /inner/
COPY *.cfg /etc/cfg/
EXPOSE 8080/tcp 53/udp
VOLUME /data
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=3s CMD true
ONBUILD RUN echo triggered
ENTRYPOINT ["/bin/sh", "-c"]
CMD ["cat /out.txt /owner.txt /inner/inner.txt /etc/cfg/*.cfg"]
USER 1000
`

/** A tar with one file (ADD unpacks it). */
function writeContext (dir: string): void {
  mkdirSync(join(dir, 'src'), { recursive: true })
  writeFileSync(join(dir, 'Dockerfile'), DOCKERFILE)
  writeFileSync(join(dir, 'src', 'a.txt'), 'source a\n')
  writeFileSync(join(dir, 'src', 'b.txt'), 'source b\n')
  writeFileSync(join(dir, 'one.cfg'), 'cfg=1\n')
  writeFileSync(join(dir, 'archive.tar'), makeTar([{ name: 'inner.txt', body: 'from the archive\n', mtime: 0 }]))
  writeFileSync(join(dir, 'debug.log'), 'ignored\n')
  writeFileSync(join(dir, 'keep.log'), 'kept\n')
  writeFileSync(join(dir, '.dockerignore'), '# logs stay out, except one\n*.log\n!keep.log\n')
}

test('docker build (classic builder) with the CLI', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const ctx = tmpDir('berth-ctx-')
  t.after(() => { spawnSync('rm', ['-rf', ctx]) })
  writeContext(ctx)
  const run = async (...args: string[]): Promise<Run> => await docker(socket, args)

  let firstOutput = ''
  await t.test('DOCKER_BUILDKIT=0: a multi-stage build with every instruction', async () => {
    const r = await docker(socket, ['build', '-t', 'berth/built:1', '-t', 'berth/built:latest', ctx], { DOCKER_BUILDKIT: '0' })
    assert.equal(r.status, 0, r.stdout + r.stderr)
    firstOutput = r.stdout
    assert.match(r.stdout, /^Sending build context to Docker daemon/m)
    assert.match(r.stdout, /^Step 1\/25 : ARG BASE=busybox$/m)
    assert.match(r.stdout, /^Step 2\/25 : FROM \$\{BASE\} AS builder\n ---> [0-9a-f]{12}$/m)
    assert.match(r.stdout, /^ ---> Running in [0-9a-f]{12}\nsource a\nRemoving intermediate container [0-9a-f]{12}\n ---> [0-9a-f]{12}$/m)
    assert.match(r.stdout, /^Step 25\/25 : USER 1000\n ---> [0-9a-f]{12}\nSuccessfully built [0-9a-f]{12}\nSuccessfully tagged berth\/built:1\nSuccessfully tagged berth\/built:latest\n$/m)
    assert.doesNotMatch(r.stdout, /Using cache/)
  })

  await t.test('the image runs and has the config and history dockerd records', async () => {
    const r = await run('run', '--rm', 'berth/built:1')
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout, 'hello from two words\n1000:1000 640\nfrom the archive\ncfg=1\n')
    const insp = JSON.parse((await run('image', 'inspect', 'berth/built:1')).stdout) as Array<{ Config: Record<string, unknown>, Author: string }>
    const c = insp[0]?.Config as Record<string, unknown>
    assert.deepEqual(c.Labels, { 'org.example.name': 'berth test', version: '1' })
    assert.deepEqual(c.ExposedPorts, { '8080/tcp': {}, '53/udp': {} })
    assert.deepEqual(c.Volumes, { '/data': {} })
    assert.equal(c.StopSignal, 'SIGTERM')
    assert.deepEqual(c.Healthcheck, { Test: ['CMD-SHELL', 'true'], Interval: 30e9, Timeout: 3e9 })
    assert.deepEqual(c.OnBuild, ['RUN echo triggered'])
    assert.deepEqual(c.Entrypoint, ['/bin/sh', '-c'])
    assert.deepEqual(c.Cmd, ['cat /out.txt /owner.txt /inner/inner.txt /etc/cfg/*.cfg'])
    assert.equal(c.User, '1000')
    const hist = (await run('history', '--no-trunc', '--format', '{{.CreatedBy}}|{{.Size}}', 'berth/built:1')).stdout.split('\n')
    assert.equal(hist[0], '/bin/sh -c #(nop)  USER 1000|0B')
    assert.equal(hist[1], '/bin/sh -c #(nop)  CMD ["cat /out.txt /owner.txt /inner/inner.txt /etc/cfg/*.cfg"]|0B')
    assert.equal(hist[2], '/bin/sh -c #(nop)  ENTRYPOINT ["/bin/sh" "-c"]|0B')
    assert.equal(hist[3], '/bin/sh -c #(nop)  ONBUILD RUN echo triggered|0B')
    assert.match(hist[4] as string, /^\/bin\/sh -c #\(nop\)  HEALTHCHECK &\{\["CMD-SHELL" "true"\] "30s" "3s" "0s" "0s" '\\x00'\}\|0B$/)
    assert.equal(hist[7], '/bin/sh -c #(nop)  EXPOSE 8080/tcp 53/udp|0B')
    assert.match(hist[8] as string, /^\/bin\/sh -c #\(nop\) COPY file:[0-9a-f]{64} in \/etc\/cfg\/ \|/)
    assert.match(hist[10] as string, /^\/bin\/sh -c #\(nop\) COPY multi:[0-9a-f]{64} in \/ \|/)
    assert.equal(hist[11], '/bin/sh -c #(nop)  LABEL org.example.name=berth test version=1|0B')
    // as dockerd, history shows the intermediate images' IDs along the parent chain
    assert.doesNotMatch((await run('history', '-q', 'berth/built:1')).stdout, /missing/)
    // the first stage's history is not in the final image; the builder stage's image is an untagged intermediate
    assert.equal(hist.filter((l) => l.includes('MAINTAINER')).length, 0)
    // intermediate images are hidden from `docker images`, shown with -a; the first stage's result is dangling
    // (as with dockerd's classic builder)
    const images = (await run('images', '--format', '{{.Repository}}:{{.Tag}}')).stdout.trim().split('\n').sort()
    assert.deepEqual(images, ['<none>:<none>', 'berth/built:1', 'berth/built:latest', 'busybox:latest'])
    assert.ok((await run('images', '-a', '-q')).stdout.trim().split('\n').length > 20)
  })

  await t.test('an image built on it runs its ONBUILD trigger', async () => {
    const child = tmpDir('berth-ctx-')
    t.after(() => { spawnSync('rm', ['-rf', child]) })
    writeFileSync(join(child, 'Dockerfile'), 'FROM berth/built:1\nUSER 0\n')
    const r = await run('build', '-t', 'berth/child', child)
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, /# Executing 1 build trigger\n ---> Running in [0-9a-f]{12}\ntriggered\n/)
  })

  await t.test('a second build (default fallback, no DOCKER_BUILDKIT) uses the cache for every step', async () => {
    const r = await run('build', '-t', 'berth/built:2', ctx)
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stderr, /legacy builder is deprecated/)
    const steps = cacheByStep(r.stdout)
    for (const [step, cached] of steps) {
      if (/^(ARG BASE|FROM |from )/.test(step)) continue
      assert.ok(cached, `step "${step}" did not use the cache:\n${r.stdout}`)
    }
    const id1 = (await run('images', '-q', 'berth/built:1')).stdout
    assert.equal((await run('images', '-q', 'berth/built:2')).stdout, id1)
    assert.notEqual(firstOutput, '')
  })

  await t.test('a change to one copied file rebuilds from that step on', async () => {
    writeFileSync(join(ctx, 'src', 'b.txt'), 'source b, changed\n')
    const r = await run('build', '-t', 'berth/built:3', ctx)
    assert.equal(r.status, 0, r.stderr)
    const steps = cacheByStep(r.stdout)
    assert.equal(steps.get('MAINTAINER Berth Tests <tests@example.com>'), true)
    assert.equal(steps.get('WORKDIR $APP_HOME'), true)
    assert.equal(steps.get('COPY --chown=1000:1000 --chmod=640 src/ ./src/'), false)
    assert.equal(steps.get('ADD archive.tar /unpacked/'), false)
    assert.equal(steps.get('SHELL ["/bin/sh", "-ec"]'), false)
    // the second stage starts from busybox again: its LABEL is cached, its COPY --from sees unchanged files
    assert.equal(steps.get('LABEL org.example.name="berth test" version=1'), true)
    assert.equal(steps.get('COPY *.cfg /etc/cfg/'), true)
    // a change in an ignored file changes nothing
    writeFileSync(join(ctx, 'debug.log'), 'still ignored\n')
    const again = await run('build', '-q', ctx)
    assert.equal(again.status, 0, again.stderr)
    assert.equal(again.stdout.trim(), (await run('image', 'inspect', '-f', '{{.Id}}', 'berth/built:3')).stdout.trim())
  })

  await t.test('--no-cache, --build-arg, --target, --label, -f outside the context', async () => {
    const df = join(tmpDir('berth-df-'), 'Other.dockerfile')
    t.after(() => { spawnSync('rm', ['-rf', join(df, '..')]) })
    writeFileSync(df, 'FROM busybox AS first\nARG WHO=nobody\nRUN echo "built by $WHO" > /who\nFROM first AS second\nRUN false\n')
    const r = await run('build', '--no-cache', '--build-arg', 'WHO=cli', '--build-arg', 'UNUSED=1', '--target', 'first', '--label', 'from.cli=yes', '-f', df, '-t', 'berth/args', ctx)
    assert.equal(r.status, 0, r.stdout + r.stderr)
    assert.doesNotMatch(r.stdout, /Using cache/)
    assert.match(r.stdout, /\[Warning\] One or more build-args \[UNUSED\] were not consumed/)
    assert.equal((await run('run', '--rm', 'berth/args', 'cat', '/who')).stdout, 'built by cli\n')
    assert.match((await run('image', 'inspect', '-f', '{{json .Config.Labels}}', 'berth/args')).stdout, /"from.cli":"yes"/)
    const hist = (await run('history', '--no-trunc', '--format', '{{.CreatedBy}}', 'berth/args')).stdout
    assert.match(hist, /^\|1 WHO=cli \/bin\/sh -c echo "built by \$WHO" > \/who$/m)
  })

  await t.test('a failing RUN: the message, the exit code, the container left or removed', async () => {
    const bad = tmpDir('berth-ctx-')
    t.after(() => { spawnSync('rm', ['-rf', bad]) })
    writeFileSync(join(bad, 'Dockerfile'), 'FROM busybox\nRUN echo before; exit 3\n')
    const before = (await run('ps', '-aq')).stdout
    const r = await run('build', bad)
    assert.equal(r.status, 3)
    assert.match(r.stderr, /The command '\/bin\/sh -c echo before; exit 3' returned a non-zero code: 3/)
    assert.match(r.stdout, /^before$/m)
    // dockerd keeps the failed step's container unless --force-rm; it is not running
    const left = (await run('ps', '-aq')).stdout
    assert.notEqual(left, before)
    assert.equal((await run('ps', '-q')).stdout, '')
    for (const id of left.trim().split('\n')) if (id !== '' && !before.includes(id)) await run('rm', id)
    const forced = await run('build', '--force-rm', bad)
    assert.equal(forced.status, 3)
    assert.match(forced.stdout, /Removing intermediate container [0-9a-f]{12}/)
    assert.equal((await run('ps', '-aq')).stdout, before)
  })

  await t.test('bad Dockerfiles: a clear error each', async () => {
    const bad = tmpDir('berth-ctx-')
    t.after(() => { spawnSync('rm', ['-rf', bad]) })
    const cases: Array<[string, RegExp]> = [
      ['FROM busybox\nFOO bar\n', /dockerfile parse error on line 2: unknown instruction: FOO/],
      ['FROM busybox\nCOPY ../outside /x\n', /COPY failed: forbidden path outside the build context: \.\.\/outside/],
      ['FROM busybox\nCOPY missing.txt /x\n', /COPY failed: file not found in build context or excluded by \.dockerignore: stat missing\.txt: file does not exist/],
      ['FROM busybox\nCOPY *.none /x/\n', /COPY failed: no source files were specified/],
      ['FROM busybox\nADD http://127.0.0.1:9/unreachable.txt /x\n', /ADD failed: unable to fetch http:\/\/127\.0\.0\.1:9\/unreachable\.txt/],
      ['# syntax=example.com/custom-frontend:1\nFROM busybox\n', /BuildKit frontend "example\.com\/custom-frontend:1"/],
      ['FROM busybox\nRUN <<EOF\necho hi\nEOF\n', /dockerfile parse error on line 2: heredocs are not supported by the classic builder/],
      // a base image neither local nor pullable (a closed loopback port)
      ['FROM 127.0.0.1:9/nosuch/image\n', /127\.0\.0\.1:9/],
      ['FROM busybox\nCOPY --from=127.0.0.1:9/nosuch /x /y\n', /invalid from flag value 127\.0\.0\.1:9\/nosuch: /],
      // dockerd's wording for each
      ['FROM busybox\nSTOPSIGNAL BOGUS\n', /Invalid signal: BOGUS/],
      ['FROM busybox\nEXPOSE 80/xyz\n', /Invalid proto: xyz/],
      ['', /the Dockerfile \(Dockerfile\) cannot be empty/],
      ['# only a comment\n', /failed to parse Dockerfile: file with no instructions/],
      ['FROM busybox\nCOPY onlyone\n', /line 2: COPY requires at least two arguments, but only one was provided\. Destination could not be determined/],
      ['FROM busybox\nENV =x\n', /line 2: ENV names can not be blank/],
      ['FROM busybox\nHEALTHCHECK\n', /line 2: HEALTHCHECK requires at least one argument/],
      ['FROM busybox\nONBUILD ONBUILD RUN x\n', /line 2: Chaining ONBUILD via `ONBUILD ONBUILD` isn't allowed/],
      ['RUN true\nFROM busybox\n', /no build stage in current context/]
    ]
    for (const [text, want] of cases) {
      writeFileSync(join(bad, 'Dockerfile'), text)
      const r = await run('build', bad)
      assert.notEqual(r.status, 0, text)
      assert.match(r.stderr, want, text)
    }
    assert.equal((await run('ps', '-q')).stdout, '')
  })

  await t.test('system df shows the build cache; builder prune removes unused intermediate images', async () => {
    // a --no-cache rebuild orphans the first build's chain once the tags move
    const r = await run('build', '--no-cache', '-t', 'berth/built:1', '-t', 'berth/built:2', '-t', 'berth/built:3', '-t', 'berth/built:latest', ctx)
    assert.equal(r.status, 0, r.stderr)
    const df = await run('system', 'df')
    assert.match(df.stdout, /^Build Cache\s+[1-9]\d*\s/m)
    const countBefore = (await run('images', '-aq')).stdout.trim().split('\n').length
    const prune = await run('builder', 'prune', '-f')
    assert.equal(prune.status, 0, prune.stderr)
    assert.match(prune.stdout, /Total reclaimed space: /)
    assert.ok((await run('images', '-aq')).stdout.trim().split('\n').length < countBefore)
    assert.equal((await run('run', '--rm', 'berth/built:1')).status, 0)
    // the tagged image's own chain stays (its second stage is all cache); the first stage, which no tag builds
    // on, was pruned and runs again
    const again = await run('build', ctx)
    const steps = [...cacheByStep(again.stdout)]
    const second = steps.findIndex(([s]) => s === 'from busybox')
    assert.ok(steps.slice(second + 1).every(([, c]) => c), again.stdout)
    assert.equal(steps.find(([s]) => s.startsWith('MAINTAINER'))?.[1], false)
  })
})
