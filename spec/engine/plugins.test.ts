// Plugins: Berth has none. `docker plugin ls` works (an empty list, filters checked as dockerd checks them); a
// named plugin is not found; installing or creating one is refused with one clear message, never "page not found".
import { test } from 'node:test'
import assert from 'node:assert/strict'
import Docker from 'dockerode'
import { startEngine, dockerCli, request } from '../helpers/engine.js'
import { runTool, dockerPySkipReason, missingTool } from '../helpers/tools.js'

const UNSUPPORTED = 'plugins are not supported by Berth'

test('plugins', async (t) => {
  const { socket } = await startEngine(t)

  await t.test('the raw API: an empty list, 404 for a named plugin, 501 for install and create', async () => {
    const list = await request(socket, 'GET', '/v1.45/plugins')
    assert.equal(list.status, 200)
    assert.deepEqual(list.json(), [])
    assert.deepEqual((await request(socket, 'GET', `/plugins?filters=${encodeURIComponent('{"enable":["true"],"capability":["volumedriver"]}')}`)).json(), [])
    const badFilter = await request(socket, 'GET', `/plugins?filters=${encodeURIComponent('{"color":["red"]}')}`)
    assert.equal(badFilter.status, 400)
    assert.match((badFilter.json() as { message: string }).message, /invalid filter 'color'/)
    assert.equal((await request(socket, 'GET', `/plugins?filters=${encodeURIComponent('{"enable":["maybe"]}')}`)).status, 400)
    for (const [method, path] of [['GET', '/plugins/vieux/sshfs:latest/json'], ['DELETE', '/plugins/vieux/sshfs'], ['POST', '/plugins/x/enable'], ['POST', '/plugins/x/disable'], ['POST', '/plugins/x/set'], ['POST', '/plugins/x/push'], ['POST', '/plugins/x/upgrade?remote=x']]) {
      const r = await request(socket, method as string, path as string, method === 'POST' ? { body: [] } : {})
      assert.equal(r.status, 404, `${method} ${path}: ${r.text}`)
      assert.ok((r.json() as { message: string }).message.includes(UNSUPPORTED), r.text)
      assert.match((r.json() as { message: string }).message, /^plugin ".+" not found/)
    }
    for (const [method, path] of [['GET', '/plugins/privileges?remote=vieux/sshfs'], ['POST', '/plugins/pull?remote=vieux/sshfs'], ['POST', '/plugins/create?name=x']]) {
      const r = await request(socket, method as string, path as string)
      assert.equal(r.status, 501, `${method} ${path}: ${r.text}`)
      assert.equal((r.json() as { message: string }).message, UNSUPPORTED)
    }
  })

  await t.test('dockerode: listPlugins', async () => {
    const docker = new Docker({ socketPath: socket })
    assert.deepEqual(await docker.listPlugins(), [])
    await assert.rejects(docker.getPlugin('vieux/sshfs', 'vieux/sshfs').inspect(), (err: { statusCode?: number }) => err.statusCode === 404)
  })

  await t.test('the docker CLI: plugin ls, inspect, install', { skip: missingTool('docker', ['--version']) ?? false }, async () => {
    const ls = await dockerCli(socket, ['plugin', 'ls'])
    assert.equal(ls.status, 0, ls.stderr)
    assert.match(ls.stdout, /^ID\s+NAME\s+DESCRIPTION\s+ENABLED\s*$/)
    const inspect = await dockerCli(socket, ['plugin', 'inspect', 'vieux/sshfs'])
    assert.notEqual(inspect.status, 0)
    assert.ok(inspect.stderr.includes(UNSUPPORTED), inspect.stderr)
    const install = await dockerCli(socket, ['plugin', 'install', '--grant-all-permissions', 'vieux/sshfs'])
    assert.notEqual(install.status, 0)
    assert.ok(install.stderr.includes(UNSUPPORTED), install.stderr)
    assert.ok(!install.stderr.includes('page not found'), install.stderr)
  })

  await t.test('docker-py: plugins.list()', { skip: dockerPySkipReason() ?? false }, async () => {
    const r = await runTool('python3', ['-c', `
import docker
c = docker.DockerClient(base_url='unix://${socket}')
assert c.plugins.list() == [], c.plugins.list()
try:
    c.plugins.get('vieux/sshfs')
    raise SystemExit('expected NotFound')
except docker.errors.NotFound:
    pass
print('ok')
`])
    assert.equal(r.status, 0, r.out)
    assert.equal(r.out.trim(), 'ok')
  })
})
