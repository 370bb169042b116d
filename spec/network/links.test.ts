// Links with the docker CLI, as dockerd has them: legacy links on the default bridge (the environment, /etc/hosts,
// `docker rm --link`), and links on a user network (an alias only the linking container resolves).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar } from '../helpers/engine.js'
import { missingTool, dockerOk } from '../helpers/tools.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed') ?? missingTool('iptables', ['-V'])

test('links: legacy links\' environment and hosts, docker rm --link; a link alias on a user network', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  const ok = dockerOk(socket)
  await ok('import', '-c', 'EXPOSE 80', busyboxTar(), 'busybox:latest')
  await ok('run', '-d', '--name', 'ldb', '-e', 'PASSWORD=gordon', '-e', 'PATH=/bin:/usr/bin', '--expose', '6379', '--expose', '6380', 'busybox', 'sleep', '600')
  const ip = (await ok('inspect', '--format', '{{.NetworkSettings.Networks.bridge.IPAddress}}', 'ldb')).trim()
  const id = (await ok('inspect', '--format', '{{.Id}}', 'ldb')).trim()

  await t.test('--link on the default bridge: <ALIAS>_PORT…, _NAME, _ENV_… as dockerd\'s daemon/links, hosts entry', async () => {
    await ok('run', '-d', '--name', 'web', '--link', 'ldb:db-1', 'busybox', 'sleep', '600')
    const env = (await ok('exec', 'web', 'env')).trim().split('\n').filter((l) => l.startsWith('DB_1_')).sort()
    const p = (n: number): string[] => [`DB_1_PORT_${n}_TCP=tcp://${ip}:${n}`, `DB_1_PORT_${n}_TCP_ADDR=${ip}`, `DB_1_PORT_${n}_TCP_PORT=${n}`, `DB_1_PORT_${n}_TCP_PROTO=tcp`]
    assert.deepEqual(env, [
      'DB_1_ENV_PASSWORD=gordon', 'DB_1_NAME=/web/db-1', `DB_1_PORT=tcp://${ip}:80`,
      ...p(6379), `DB_1_PORT_6379_TCP_END=tcp://${ip}:6380`, `DB_1_PORT_6379_TCP_PORT_END=6380`, `DB_1_PORT_6379_TCP_PORT_START=6379`,
      `DB_1_PORT_6379_TCP_START=tcp://${ip}:6379`, ...p(6380), ...p(80)
    ].sort())
    assert.match(await ok('exec', 'web', 'cat', '/etc/hosts'), new RegExp(`^${ip.replace(/\./g, '\\.')}\\s+db-1 ${id.slice(0, 12)} ldb$`, 'm'))
    // the container's own variables win over a link's of the same name
    assert.match(await ok('run', '--rm', '--link', 'ldb:db-1', '-e', 'DB_1_NAME=mine', 'busybox', 'env'), /^DB_1_NAME=mine$/m)
    // a link without an alias is named after its target
    assert.match(await ok('run', '--rm', '--name', 'other', '--link', 'ldb', 'busybox', 'env'), /^LDB_NAME=\/other\/ldb$/m)
  })

  await t.test('docker rm --link /web/db-1 removes the link; a container name or an unknown link is refused as dockerd', async () => {
    assert.match((await docker('rm', '--link', 'ldb')).stderr, /Conflict, cannot remove the default link name of the container/)
    assert.match((await docker('rm', '--link', '/web/nosuch')).stderr, /No such container: web\/nosuch/)
    assert.equal((await ok('rm', '--link', '/web/db-1')).trim(), '/web/db-1')
    assert.match((await docker('rm', '--link', '/web/db-1')).stderr, /No such container: web\/db-1/)
    assert.equal((await ok('inspect', '--format', '{{json .HostConfig.Links}}', 'web')).trim(), 'null')
    // the link is gone from the next start: no variables, no hosts entry, and ldb may stop without blocking it
    await ok('stop', '-t', '0', 'web')
    await ok('stop', '-t', '0', 'ldb')
    await ok('start', 'web')
    assert.doesNotMatch(await ok('exec', 'web', 'env'), /DB_1_/)
    assert.doesNotMatch(await ok('exec', 'web', 'cat', '/etc/hosts'), /db-1/)
    await ok('rm', '-f', 'web', 'ldb')
  })

  await t.test('--link on a user network: the alias resolves for the linking container only', async () => {
    await ok('network', 'create', 'app')
    await ok('run', '-d', '--name', 'srv', '--network', 'app', 'busybox', 'sleep', '600')
    const srvIp = (await ok('inspect', '--format', '{{.NetworkSettings.Networks.app.IPAddress}}', 'srv')).trim()
    const linked = await ok('run', '--rm', '--network', 'app', '--link', 'srv:backend', 'busybox', 'sh', '-c', 'nslookup backend; nslookup backend.app; echo ---; env; cat /etc/hosts')
    const [lookups = '', files = ''] = linked.split('---\n')
    assert.equal(lookups.split('\n').filter((l) => l === `Address: ${srvIp}`).length, 2, linked)
    // no legacy environment or hosts entry on a user network (dockerd's)
    assert.doesNotMatch(files, /BACKEND_|backend/)
    assert.notEqual((await docker('run', '--rm', '--network', 'app', 'busybox', 'nslookup', '-timeout=2', 'backend')).status, 0)
    await ok('rm', '-f', 'srv')
    await ok('network', 'rm', 'app')
  })
})
