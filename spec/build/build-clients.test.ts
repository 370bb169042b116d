// Builds from docker-py (client.images.build) and docker-compose 1.29 (`build:` in a compose file).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'
import { startEngine, containerSkipReason, importBusybox, tmpDir, dockerCli, hasDockerCli } from '../helpers/engine.js'
import { runTool } from '../helpers/tools.js'

const skip = containerSkipReason()
const python = spawnSync('python3', ['-c', 'import docker'], { encoding: 'utf8' })
const pySkip = skip ?? (python.status === 0 ? null : 'python3-docker is not installed (apt-get install python3-docker)')
const compose = spawnSync('docker-compose', ['version'], { encoding: 'utf8' })
const composeSkip = skip ?? (compose.status === 0 ? (hasDockerCli() ? null : 'the docker CLI is not installed') : 'docker-compose is not installed (apt-get install docker-compose)')

function context (dir: string): void {
  mkdirSync(join(dir, 'app'), { recursive: true })
  writeFileSync(join(dir, 'Dockerfile'), 'FROM busybox AS base\nARG WHO=nobody\nCOPY app/ /app/\nRUN echo "by $WHO" > /app/who\nFROM base\nWORKDIR /app\nCMD ["cat", "/app/who", "/app/data.txt"]\n')
  writeFileSync(join(dir, 'app', 'data.txt'), 'data\n')
  writeFileSync(join(dir, 'app', 'skip.tmp'), 'tmp\n')
  writeFileSync(join(dir, '.dockerignore'), '**/*.tmp\n')
}

test('docker-py images.build', { skip: pySkip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const ctx = tmpDir('berth-ctx-')
  t.after(() => { spawnSync('rm', ['-rf', ctx]) })
  context(ctx)
  writeFileSync(join(ctx, 'Bad.dockerfile'), 'FROM busybox\nRUN echo failing; exit 7\n')
  writeFileSync(join(ctx, 'Opts.dockerfile'), 'FROM busybox AS first\nARG A\nRUN echo "a=$A"; grep myhost /etc/hosts; echo "shm=$(df -k /dev/shm | tail -1 | awk \'{print $2}\')"; ' +
    'echo "mem=$(cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes)"; echo "ifaces=$(grep -c : /proc/net/dev)"\nLABEL from=df\nFROM first AS second\nRUN false\n')
  const script = `
import docker
c = docker.DockerClient(base_url='unix://${socket}')
img, logs = c.images.build(path='${ctx}', tag='py/built:1', buildargs={'WHO': 'docker-py'}, rm=True)
text = ''.join(l.get('stream', '') for l in logs)
assert 'Successfully built' in text and 'Successfully tagged py/built:1' in text, text
assert img.tags == ['py/built:1'], img.tags
out = c.containers.run('py/built:1', remove=True)
assert out == b'by docker-py\\ndata\\n', out
assert c.containers.run('py/built:1', ['ls', '/app'], remove=True) == b'data.txt\\nwho\\n'
img2, logs2 = c.images.build(path='${ctx}', tag='py/built:2', buildargs={'WHO': 'docker-py'})
text2 = ''.join(l.get('stream', '') for l in logs2)
assert text2.count('Using cache') == 5, text2
assert img2.id == img.id
try:
    c.images.build(path='${ctx}', dockerfile='Bad.dockerfile', forcerm=True)
    raise SystemExit('expected BuildError')
except docker.errors.BuildError as e:
    assert "The command '/bin/sh -c echo failing; exit 7' returned a non-zero code: 7" in str(e), str(e)
    assert any('failing' in l.get('stream', '') for l in e.build_log)
assert c.containers.list(all=True) == []
# the options docker-py encodes itself (labels and cache_from as JSON, extra_hosts repeated, container_limits)
img3, logs3 = c.images.build(path='${ctx}', dockerfile='Opts.dockerfile', tag='py/opts', buildargs={'A': '1'}, nocache=True,
    labels={'l': 'v'}, target='first', shmsize=16 * 1024 * 1024, extra_hosts={'myhost': '10.9.8.7'}, network_mode='none',
    container_limits={'memory': 64 * 1024 * 1024, 'cpushares': 512}, cache_from=['busybox'], platform='linux')
text3 = ''.join(l.get('stream', '') for l in logs3)
assert 'a=1\\n' in text3 and '10.9.8.7\\tmyhost\\n' in text3 and 'shm=16384\\n' in text3 and 'mem=67108864\\n' in text3 and 'ifaces=1\\n' in text3, text3
assert img3.labels == {'from': 'df', 'l': 'v'}, img3.labels
print('ok')
`
  const r = await runTool('python3', ['-c', script])
  assert.equal(r.status, 0, r.out)
  assert.equal(r.out.trim(), 'ok')
})

test('docker-compose build', { skip: composeSkip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const proj = tmpDir('berth-compose-')
  t.after(() => { spawnSync('rm', ['-rf', proj]) })
  context(join(proj, 'web'))
  // `up` on compose's own project network; the build's RUN steps use the default network
  writeFileSync(join(proj, 'docker-compose.yml'), `version: "3.8"
services:
  web:
    build:
      context: ./web
      args:
        WHO: compose
      labels:
        built.by: compose
      shm_size: '16m'
      extra_hosts:
        - "composehost:10.9.8.6"
      cache_from:
        - composed/web:1
    image: composed/web:1
`)
  const env = { ...process.env, DOCKER_HOST: `unix://${socket}`, COMPOSE_DOCKER_CLI_BUILD: '0', DOCKER_BUILDKIT: '0' }
  const b = await runTool('docker-compose', ['-p', 'berthbuild', 'build'], { env, cwd: proj })
  assert.equal(b.status, 0, b.out)
  assert.match(b.out, /Successfully tagged composed\/web:1/)
  const again = await runTool('docker-compose', ['-p', 'berthbuild', 'build'], { env, cwd: proj })
  assert.equal(again.status, 0, again.out)
  // the labels are one more (LABEL) step at the end of the last stage, as dockerd adds them; cache_from names the
  // image itself (its intermediate images are its parents: the classic builder uses only those with cache_from)
  assert.equal((again.out.match(/Using cache/g) ?? []).length, 6, again.out)
  assert.equal((await dockerCli(socket, ['image', 'inspect', '-f', '{{index .Config.Labels "built.by"}}', 'composed/web:1'])).stdout.trim(), 'compose')
  const r = await dockerCli(socket, ['run', '--rm', 'composed/web:1'])
  assert.equal(r.stdout, 'by compose\ndata\n', r.stderr)
  const up = await runTool('docker-compose', ['-p', 'berthbuild', 'up', '--no-color'], { env, cwd: proj })
  assert.equal(up.status, 0, up.out)
  assert.match(up.out, /by compose/)
  await runTool('docker-compose', ['-p', 'berthbuild', 'down'], { env, cwd: proj })
})
