// docker-compose 1.29 with a top-level named volume shared by two services (up -d, restart keeps the data, down keeps
// the volume, down -v removes it) and docker-py's client.volumes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar } from '../helpers/engine.js'
import { runTool, composeEnv, composeOk, composeSkipReason, dockerPySkipReason, missingTool } from '../helpers/tools.js'

const base = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed') ?? missingTool('iptables', ['-V'])
const composeSkip = base ?? composeSkipReason()
const pySkip = base ?? dockerPySkipReason()

test('docker-compose 1.29: a named volume shared by two services', { skip: composeSkip ?? false }, async (t) => {
  const { socket, dir } = await startEngine(t)
  assert.equal((await dockerCli(socket, ['import', busyboxTar(), 'busybox:latest'])).status, 0)
  const proj = join(dir, 'proj')
  mkdirSync(proj)
  writeFileSync(join(proj, 'docker-compose.yml'), [
    'version: "3"',
    'services:',
    '  writer:',
    '    image: busybox',
    '    command: sh -c "echo written-$$(date +%s%N) >> /shared/log; sleep 300"',
    '    volumes:',
    '      - data:/shared',
    '  reader:',
    '    image: busybox',
    '    command: sleep 300',
    '    volumes:',
    '      - data:/data:ro',
    'volumes:',
    '  data:',
    '    labels:',
    '      purpose: shared',
    ''
  ].join('\n'))
  const env = composeEnv(socket, 'vt')
  const compose = composeOk(env, proj)
  const readLog = async (): Promise<string[]> => {
    for (let i = 0; i < 100; i++) {
      const r = await compose('exec', '-T', 'reader', 'cat', '/data/log').catch(() => '')
      if (r.trim() !== '') return r.trim().split('\n')
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    return []
  }
  assert.match(await compose('up', '-d'), /Creating volume "vt_data" with default driver/)
  // on the project's own network (a user-defined bridge), not the default one
  const nets = (await dockerCli(socket, ['inspect', '-f', '{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}', 'vt_writer_1', 'vt_reader_1'])).stdout
  assert.equal(nets, 'vt_default \nvt_default \n')
  const v = JSON.parse((await dockerCli(socket, ['volume', 'inspect', 'vt_data'])).stdout) as Array<{ Labels: Record<string, string> }>
  assert.equal(v[0]?.Labels.purpose, 'shared')
  assert.equal(v[0]?.Labels['com.docker.compose.volume'], 'data')
  assert.equal((await readLog()).length, 1)
  await compose('restart')
  let lines: string[] = []
  for (let i = 0; i < 100 && lines.length < 2; i++) { lines = await readLog(); if (lines.length < 2) await new Promise((resolve) => setTimeout(resolve, 100)) }
  assert.equal(lines.length, 2, 'the restarted writer appended to the same volume')
  const ro = await runTool('docker-compose', ['exec', '-T', 'reader', 'touch', '/data/x'], { env, cwd: proj })
  assert.notEqual(ro.status, 0)
  await compose('down')
  assert.equal((await dockerCli(socket, ['volume', 'ls', '-q'])).stdout.trim(), 'vt_data')
  await compose('up', '-d')
  for (let i = 0; i < 100 && lines.length < 3; i++) { lines = await readLog(); if (lines.length < 3) await new Promise((resolve) => setTimeout(resolve, 100)) }
  assert.equal(lines.length, 3, 'up after down found the data')
  assert.match(await compose('down', '-v'), /Removing volume vt_data/)
  assert.equal((await dockerCli(socket, ['volume', 'ls', '-q'])).stdout.trim(), '')
})

test('docker-py: client.volumes create, get, list, prune, remove', { skip: pySkip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  assert.equal((await dockerCli(socket, ['import', busyboxTar(), 'busybox:latest'])).status, 0)
  const script = `
import docker, sys
c = docker.DockerClient(base_url="unix://" + sys.argv[1])
v = c.volumes.create("pyvol", labels={"py": "1"})
print(v.name, v.attrs["Driver"], v.attrs["Labels"])
print(c.volumes.get("pyvol").attrs["Mountpoint"].endswith("/volumes/pyvol/_data"))
out = c.containers.run("busybox", "sh -c 'echo hi > /v/f; cat /v/f'", volumes={"pyvol": {"bind": "/v", "mode": "rw"}}, remove=True)
print(out.decode().strip())
print([x.name for x in c.volumes.list(filters={"label": "py=1"})])
try:
    c.volumes.get("nope")
except docker.errors.NotFound as e:
    print("notfound", e.explanation)
c.volumes.create("other")
print(sorted(c.volumes.prune(filters={"all": "true", "label": "py=1"})["VolumesDeleted"] or []))
print(sorted(x.name for x in c.volumes.list()))
c.volumes.get("other").remove()
print(len(c.volumes.list()))
`
  const r = await runTool('python3', ['-c', script, socket])
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout, "pyvol local {'py': '1'}\nTrue\nhi\n['pyvol']\nnotfound get nope: no such volume\n['pyvol']\n['other']\n0\n")
})
