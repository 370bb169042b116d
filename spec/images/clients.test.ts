// The remaining client checks: the seed's pull with X-Registry-Auth {username,password,serveraddress} over
// curl against a token-auth registry, and docker-py's container.commit.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { startEngine, importBusybox, containerSkipReason, request } from '../helpers/engine.js'
import { runTool } from '../helpers/tools.js'
import { registrySkipReason, startDistribution, startTokenServer, seedImage, makeTar, records } from './registry-fixture.js'

const skip = containerSkipReason()

const curlSkip = skip ?? registrySkipReason() ?? (spawnSync('curl', ['--version']).status === 0 ? null : 'curl is not installed')

test('the seed pull over curl with X-Registry-Auth against a token-auth registry', { skip: curlSkip ?? false }, async (t) => {
  const token = await startTokenServer(t, { users: { alice: 'secret' } })
  const reg = await startDistribution(t, { token })
  const admin = `Bearer ${token.issue('alice', ['repository:private/app:pull,push'])}`
  await seedImage(reg.url, 'private/app', { layers: [makeTar([{ name: 'hello.txt', body: 'hi\n' }])], tag: 'latest', auth: admin })
  const { socket } = await startEngine(t)
  const header = Buffer.from(JSON.stringify({ username: 'alice', password: 'secret', serveraddress: reg.host })).toString('base64')
  const ok = await runTool('curl', ['-s', '--unix-socket', socket, '-X', 'POST', '-H', `X-Registry-Auth: ${header}`, `http://localhost/v1.50/images/create?fromImage=${reg.host}/private/app&tag=latest`])
  const recs = records(ok.stdout)
  assert.equal(recs[0]?.status, 'Pulling from private/app')
  assert.ok(recs.every((r) => r.errorDetail === undefined), ok.stdout)
  assert.equal(recs.at(-1)?.status, `Status: Downloaded newer image for ${reg.host}/private/app:latest`)
  for (const r of recs) if (r.progressDetail !== undefined) assert.equal(typeof r.progressDetail, 'object')
  const insp = (await request(socket, 'GET', `/images/${reg.host}/private/app:latest/json`)).json() as { RepoDigests: string[] }
  assert.match(insp.RepoDigests[0] ?? '', /@sha256:[0-9a-f]{64}$/)
  const wrong = Buffer.from(JSON.stringify({ username: 'alice', password: 'nope', serveraddress: reg.host })).toString('base64')
  const denied = await runTool('curl', ['-s', '-w', '\n%{http_code}', '--unix-socket', socket, '-X', 'POST', '-H', `X-Registry-Auth: ${wrong}`, `http://localhost/images/create?fromImage=${reg.host}/private/app&tag=latest`])
  assert.match(denied.stdout, /\n401$/)
})

const py = spawnSync('python3', ['-c', 'import docker'])
const pySkip = skip ?? (py.status === 0 ? null : 'python3-docker is not installed')

test('docker-py container.commit', { skip: pySkip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const script = `
import docker, sys
c = docker.DockerClient(base_url='unix://' + sys.argv[1])
ct = c.containers.run('busybox', ['sh', '-c', 'echo from-py > /py'], detach=True)
ct.wait()
img = ct.commit(repository='pycommit', tag='v1', message='by docker-py', conf={'Cmd': ['cat', '/py']})
assert 'pycommit:v1' in img.tags, img.tags
assert c.containers.run('pycommit:v1', remove=True) == b'from-py\\n'
assert img.attrs['Comment'] == 'by docker-py'
ct.remove()
print('ok')
`
  const r = await runTool('python3', ['-c', script, socket])
  assert.equal(r.status, 0, r.stdout + r.stderr)
  assert.equal(r.stdout.trim(), 'ok')
})
