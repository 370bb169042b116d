// Secrets and configs: create (base64 data), list, inspect without secret data, label updates, removal refused
// while a service uses them; mounted into task containers from a tmpfs at /run/secrets/<name> and config targets.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar, request } from '../helpers/engine.js'
import { dockerOk, until, runningBySlot } from './helpers.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')

test('secrets and configs', { skip: skip ?? false }, async (t) => {
  const { socket, dataRoot } = await startEngine(t)
  const docker = dockerOk(socket)
  await docker('import', busyboxTar(), 'busybox:latest')
  await docker('swarm', 'init', '--advertise-addr', '127.0.0.1')

  let secretId = ''
  await t.test('create, ls, inspect without data, label update, errors', async () => {
    const c = await dockerCli(socket, ['secret', 'create', '--label', 'env=test', 'pw', '-'], 'hunter2\n')
    assert.equal(c.status, 0, c.stderr)
    secretId = c.stdout.trim()
    assert.match(secretId, /^[0-9a-z]{25}$/)
    assert.match(await docker('secret', 'ls'), new RegExp(`${secretId}\\s+pw\\s`))
    const insp = (await request(socket, 'GET', '/secrets/pw')).json() as { ID: string, Version: { Index: number }, Spec: Record<string, unknown> }
    assert.equal(insp.ID, secretId)
    assert.deepEqual(insp.Spec, { Name: 'pw', Labels: { env: 'test' } })
    const up = await request(socket, 'POST', `/secrets/${secretId}/update?version=${insp.Version.Index}`, { body: { Name: 'pw', Labels: { env: 'prod' } } })
    assert.equal(up.status, 200, up.text)
    assert.deepEqual(((await request(socket, 'GET', '/secrets/pw')).json() as { Spec: unknown }).Spec, { Name: 'pw', Labels: { env: 'prod' } })
    const dup = await request(socket, 'POST', '/secrets/create', { body: { Name: 'pw', Data: 'eA==' } })
    assert.equal(dup.status, 409)
    assert.deepEqual(dup.json(), { message: 'rpc error: code = AlreadyExists desc = secret pw already exists' })
    assert.deepEqual((await request(socket, 'GET', '/secrets/nope')).json(), { message: 'secret nope not found' })
    const cfg = await request(socket, 'POST', '/configs/create', { body: { Name: 'app.conf', Data: Buffer.from('port=80\n').toString('base64') } })
    assert.equal(cfg.status, 201, cfg.text)
    const ci = (await request(socket, 'GET', '/configs/app.conf')).json() as { Spec: { Data: string } }
    assert.equal(Buffer.from(ci.Spec.Data, 'base64').toString(), 'port=80\n')
    assert.match(await docker('config', 'ls'), /app\.conf/)
    const missing = await request(socket, 'POST', '/services/create', { body: { Name: 'x', TaskTemplate: { ContainerSpec: { Image: 'busybox', Secrets: [{ SecretID: 'nope', SecretName: 'nope', File: { Name: 'nope', UID: '0', GID: '0', Mode: 292 } }] } } } })
    assert.equal(missing.status, 400)
    assert.deepEqual(missing.json(), { message: 'rpc error: code = InvalidArgument desc = secret not found: nope' })
  })

  await t.test('mounted from a tmpfs with uid/gid/mode; removal refused while in use', async () => {
    await docker('service', 'create', '-d', '--name', 'app', '--stop-grace-period', '1s', '--secret', 'pw', '--secret', 'source=pw,target=other,uid=1000,gid=1001,mode=0400',
      '--config', 'source=app.conf,target=/etc/app.conf,mode=0440', 'busybox', 'sleep', '600')
    const task = await until('running', async () => (await runningBySlot(socket, 'app')).get(1))
    const cid = task.Status.ContainerStatus?.ContainerID as string
    assert.equal(await docker('exec', cid, 'cat', '/run/secrets/pw'), 'hunter2\n')
    assert.equal(await docker('exec', cid, 'cat', '/etc/app.conf'), 'port=80\n')
    assert.equal((await docker('exec', cid, 'stat', '-c', '%u %g %a', '/run/secrets/other')).trim(), '1000 1001 400')
    assert.equal((await docker('exec', cid, 'stat', '-c', '%a', '/run/secrets/pw')).trim(), '444')
    assert.equal((await docker('exec', cid, 'stat', '-c', '%a', '/etc/app.conf')).trim(), '440')
    const mounts = await docker('exec', cid, 'cat', '/proc/mounts')
    assert.match(mounts, /^tmpfs \/run\/secrets\/pw tmpfs ro/m)
    // the data is nowhere under the engine's data root
    const grep = spawnSync('grep', ['-rl', 'hunter2', dataRoot], { encoding: 'utf8' })
    assert.equal(grep.stdout, '', 'the secret is not in a file under the data root')
    const rm = await dockerCli(socket, ['secret', 'rm', 'pw'])
    assert.notEqual(rm.status, 0)
    assert.match(rm.stderr, /rpc error: code = InvalidArgument desc = secret 'pw' is in use by the following service: app/)
    const rmc = await dockerCli(socket, ['config', 'rm', 'app.conf'])
    assert.match(rmc.stderr, /config 'app.conf' is in use by the following service: app/)
    await docker('service', 'rm', 'app')
    await docker('secret', 'rm', 'pw')
    await docker('config', 'rm', 'app.conf')
    assert.doesNotMatch(await docker('secret', 'ls'), /pw/)
  })

  await t.test('a secret whose owner cannot be set: the task is rejected with the reason, as dockerd fails it', async () => {
    const c = await dockerCli(socket, ['secret', 'create', 'owned', '-'], 'x\n')
    assert.equal(c.status, 0, c.stderr)
    const secretId = c.stdout.trim()
    const r = await request(socket, 'POST', '/services/create', {
      body: { Name: 'badowner', TaskTemplate: { ContainerSpec: { Image: 'busybox', Command: ['sleep', '600'], Secrets: [{ SecretID: secretId, SecretName: 'owned', File: { Name: 'owned', UID: 'nobody', GID: '0', Mode: 292 } }] }, RestartPolicy: { Condition: 'none' } } }
    })
    assert.equal(r.status, 201, r.text)
    const rejected = await until('a rejected task', async () => {
      const tasks = (await request(socket, 'GET', `/tasks?filters=${encodeURIComponent(JSON.stringify({ service: ['badowner'] }))}`)).json() as Array<{ Status: { State: string, Err?: string } }>
      return tasks.find((x) => x.Status.State === 'rejected')
    })
    assert.match(rejected.Status.Err ?? '', /^error setting ownership for secret owned: /)
    await docker('service', 'rm', 'badowner')
  })
})
