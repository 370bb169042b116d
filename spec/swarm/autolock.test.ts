// Swarm init's address pools and data path port, insertDefaults, and autolock through the docker CLI: the unlock key
// printed at init, secrets sealed in the state file, a restarted daemon's swarm locked until `docker swarm unlock`,
// key rotation, and autolock turned off again.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { once } from 'node:events'
import { tmpDir, request, containerSkipReason, hasDockerCli, dockerCli, busyboxTar, uniqueNetworkOptions, daemonNetworkArgs, cleanupDaemon, startDaemonProcess } from '../helpers/engine.js'
import { dockerOk, until, runningBySlot } from './helpers.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')
const LOCKED = 'Swarm is encrypted and needs to be unlocked before it can be used. Please use "docker swarm unlock" to unlock it.'
const SECRET = 'correct-horse-battery-staple'

test('swarm init options, insertDefaults and autolock', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  const sock = join(dir, 'b.sock')
  const n = uniqueNetworkOptions()
  let daemon: ChildProcess = await startDaemonProcess(dir, daemonNetworkArgs(n))
  t.after(async () => { await cleanupDaemon(daemon, dir, n) })
  const docker = dockerOk(sock)
  const fails = async (args: string[], input?: string): Promise<string> => {
    const r = await dockerCli(sock, args, input)
    assert.notEqual(r.status, 0, `docker ${args.join(' ')} should fail: ${r.stdout}`)
    return r.stderr
  }
  const restart = async (): Promise<void> => {
    daemon.kill('SIGTERM')
    await once(daemon, 'exit')
    daemon = await startDaemonProcess(dir, daemonNetworkArgs(n))
  }
  const statePath = join(dir, 'data', 'swarm', 'state.json')
  const keysPath = join(dir, 'data', 'swarm', 'keys.json')
  await docker('import', busyboxTar(), 'busybox:latest')

  await t.test('init refuses bad pools, subnet sizes and data path ports in dockerd\'s words', async () => {
    assert.match(await fails(['swarm', 'init', '--advertise-addr', '127.0.0.1', '--default-addr-pool', '10.20.0.0/16', '--default-addr-pool-mask-length', '30']), /subnet size is out of range: 30/)
    assert.match(await fails(['swarm', 'init', '--advertise-addr', '127.0.0.1', '--default-addr-pool', '10.20.0.0/16', '--default-addr-pool-mask-length', '12']), /invalid CIDR: "10.20.0.0\/16". Subnet size is too small for pool: 12/)
    assert.match(await fails(['swarm', 'init', '--advertise-addr', '127.0.0.1', '--data-path-port', '80']), /Datapath port number is not in valid range \(1024-49151\) : 80/)
    const bad = await request(sock, 'POST', '/swarm/init', { body: { ListenAddr: '0.0.0.0:2377', AdvertiseAddr: '127.0.0.1', DefaultAddrPool: ['not-a-cidr'] } })
    assert.equal(bad.status, 400, bad.text)
    assert.equal((await docker('info', '--format', '{{.Swarm.LocalNodeState}}')).trim(), 'inactive')
  })

  let key = ''
  await t.test('init --autolock with pools: the key is printed, the pools and port are shown', async () => {
    // the pool is this engine's own /16 (no other test engine on the host, of this run or another, takes subnets
    // from it): the subnets picked from it are the first ones
    const pool = n.defaultAddressPools[0]?.base as string
    const sub = pool.replace(/\.0\.0\/16$/, '')
    const out = await docker('swarm', 'init', '--advertise-addr', '127.0.0.1', '--autolock', '--default-addr-pool', pool, '--default-addr-pool-mask-length', '26', '--data-path-port', '7789')
    key = /(SWMKEY-1-[A-Za-z0-9+/]{43})/.exec(out)?.[1] ?? ''
    assert.notEqual(key, '', out)
    assert.equal((await docker('swarm', 'unlock-key', '-q')).trim(), key)
    const sw = (await request(sock, 'GET', '/swarm')).json() as { DefaultAddrPool: string[], SubnetSize: number, DataPathPort: number, Spec: { EncryptionConfig: { AutoLockManagers: boolean } } }
    assert.deepEqual([sw.DefaultAddrPool, sw.SubnetSize, sw.DataPathPort, sw.Spec.EncryptionConfig.AutoLockManagers], [[pool], 26, 7789, true])
    // the routing mesh's network, made at init from the first subnet of the pools; overlays take the next ones
    assert.equal((await docker('network', 'inspect', '--format', '{{.Driver}} {{.Scope}} {{.Ingress}} {{(index .IPAM.Config 0).Subnet}}', 'ingress')).trim(), `overlay swarm true ${sub}.0.0/26`)
    await docker('network', 'create', '-d', 'overlay', 'pooled')
    assert.equal((await docker('network', 'inspect', '--format', '{{(index .IPAM.Config 0).Subnet}}', 'pooled')).trim(), `${sub}.0.64/26`)
    await docker('network', 'rm', 'pooled')
    const second = await request(sock, 'POST', '/networks/create', { body: { Name: 'mesh2', Driver: 'overlay', Ingress: true } })
    assert.equal(second.status, 409, second.text)
    assert.match(second.text, /ingress network \([0-9a-f]{64}\) is already present/)
    const info = await docker('info')
    assert.match(info, /Autolock Managers: true/)
    assert.match(info, new RegExp(`Default Address Pool: ${pool.replace(/\./g, '\\.')}\\s`))
    assert.match(info, /SubnetSize: 26/)
    assert.match(info, /Data Path Port: 7789/)
  })

  await t.test('insertDefaults: the spec with swarmkit\'s defaults; docker service update starts from them', async () => {
    await docker('service', 'create', '-d', '--name', 'plain', 'busybox', 'sleep', '600')
    const bare = (await request(sock, 'GET', '/services/plain')).json() as { ID: string, Spec: Record<string, unknown> }
    assert.equal(bare.Spec.UpdateConfig, undefined)
    const full = (await request(sock, 'GET', `/services/${bare.ID}?insertDefaults=true`)).json() as { Spec: { UpdateConfig: unknown, RollbackConfig: unknown, TaskTemplate: { ContainerSpec: { StopGracePeriod: number, DNSConfig: unknown }, RestartPolicy: unknown, Placement: unknown, Resources: unknown } } }
    const cfg = { Parallelism: 1, FailureAction: 'pause', Monitor: 5e9, MaxFailureRatio: 0, Order: 'stop-first' }
    assert.deepEqual(full.Spec.UpdateConfig, cfg)
    assert.deepEqual(full.Spec.RollbackConfig, cfg)
    assert.deepEqual(full.Spec.TaskTemplate.RestartPolicy, { Condition: 'any', Delay: 5e9, MaxAttempts: 0 })
    assert.equal(full.Spec.TaskTemplate.ContainerSpec.StopGracePeriod, 10e9)
    assert.deepEqual(full.Spec.TaskTemplate.ContainerSpec.DNSConfig, {})
    assert.deepEqual(full.Spec.TaskTemplate.Placement, {})
    // the CLI sends empty limits and reservations; an API client that sends none gets {}
    assert.deepEqual(full.Spec.TaskTemplate.Resources, { Limits: {}, Reservations: {} })
    const raw = (await request(sock, 'POST', '/services/create', { body: { Name: 'raw', TaskTemplate: { ContainerSpec: { Image: 'busybox', Command: ['sleep', '600'] } } } })).json() as { ID: string }
    const rawFull = (await request(sock, 'GET', `/services/${raw.ID}?insertDefaults=1`)).json() as { Spec: { TaskTemplate: { Resources: unknown, Placement: unknown } } }
    assert.deepEqual(rawFull.Spec.TaskTemplate.Placement, {})
    assert.equal(typeof rawFull.Spec.TaskTemplate.Resources, 'object')
    await docker('service', 'rm', 'raw')
    await docker('service', 'update', '-d', '--update-parallelism', '2', 'plain')
    const after = (await request(sock, 'GET', '/services/plain')).json() as { Spec: { UpdateConfig: { Parallelism: number, Order: string } } }
    assert.equal(after.Spec.UpdateConfig.Parallelism, 2)
    assert.equal(after.Spec.UpdateConfig.Order, 'stop-first')
    await docker('service', 'rm', 'plain')
  })

  await t.test('secrets and configs are sealed in the state file; the data key is wrapped', async () => {
    await docker('secret', 'create', 'pw', '-').catch(() => '')
    const r = await dockerCli(sock, ['secret', 'create', 'pw2', '-'], SECRET)
    assert.equal(r.status, 0, r.stderr)
    const c = await dockerCli(sock, ['config', 'create', 'cfg', '-'], 'config-body-text')
    assert.equal(c.status, 0, c.stderr)
    await docker('service', 'create', '-d', '--name', 'reader', '--secret', 'pw2', '--restart-delay', '0s', 'busybox', 'sleep', '600')
    const state = readFileSync(statePath, 'utf8')
    for (const plain of [SECRET, 'config-body-text']) {
      assert.ok(!state.includes(plain) && !state.includes(Buffer.from(plain).toString('base64')), `${plain} sits in the state file`)
    }
    const keys = JSON.parse(readFileSync(keysPath, 'utf8')) as Record<string, unknown>
    assert.deepEqual(Object.keys(keys), ['wrapped'])
    const cfg = (await request(sock, 'GET', '/configs/cfg')).json() as { Spec: { Data: string } }
    assert.equal(Buffer.from(cfg.Spec.Data, 'base64').toString(), 'config-body-text')
  })

  await t.test('after a restart the swarm is locked until unlocked with the key; task containers keep running', async () => {
    const before = await until('reader runs', async () => { const m = await runningBySlot(sock, 'reader'); return m.size === 1 ? m : undefined })
    await restart()
    assert.equal((await docker('info', '--format', '{{.Swarm.LocalNodeState}}')).trim(), 'locked')
    for (const path of ['/swarm', '/services', '/secrets', '/nodes', '/tasks']) {
      const res = await request(sock, 'GET', path)
      assert.equal(res.status, 503, path)
      assert.deepEqual(res.json(), { message: LOCKED })
    }
    assert.match(await fails(['service', 'ls']), /Swarm is encrypted and needs to be unlocked/)
    assert.match(await fails(['swarm', 'unlock'], 'SWMKEY-1-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n'), /swarm could not be unlocked: invalid key provided/)
    assert.match(await fails(['swarm', 'unlock'], 'nonsense\n'), /invalid key string/)
    const cid = before.get(1)?.Status.ContainerStatus?.ContainerID as string
    assert.equal((await docker('inspect', '--format', '{{.State.Running}}', cid)).trim(), 'true')
    const ok = await dockerCli(sock, ['swarm', 'unlock'], key + '\n')
    assert.equal(ok.status, 0, ok.stderr)
    assert.equal((await docker('info', '--format', '{{.Swarm.LocalNodeState}}')).trim(), 'active')
    assert.match(await fails(['swarm', 'unlock'], key + '\n'), /swarm is not locked/)
    assert.match(await docker('secret', 'ls'), /pw2/)
    // the task's secret file still holds the data, and its container was re-adopted, not replaced
    assert.equal((await docker('exec', cid, 'cat', '/run/secrets/pw2')), SECRET)
    const m = await runningBySlot(sock, 'reader')
    assert.equal(m.get(1)?.ID, before.get(1)?.ID)
  })

  await t.test('unlock-key --rotate: the old key stops working, the new one unlocks', async () => {
    const out = await docker('swarm', 'unlock-key', '--rotate')
    const next = /(SWMKEY-1-[A-Za-z0-9+/]{43})/.exec(out)?.[1] ?? ''
    assert.ok(next !== '' && next !== key, out)
    await restart()
    assert.match(await fails(['swarm', 'unlock'], key + '\n'), /invalid key provided/)
    const ok = await dockerCli(sock, ['swarm', 'unlock'], next + '\n')
    assert.equal(ok.status, 0, ok.stderr)
    // a new task gets the secret after the unlock
    await docker('service', 'update', '-d', '--force', 'reader')
    const m = await until('a new reader task', async () => { const r = await runningBySlot(sock, 'reader'); const cid = r.get(1)?.Status.ContainerStatus?.ContainerID; return cid !== undefined && r.get(1)?.ID !== undefined ? r : undefined })
    const cid = m.get(1)?.Status.ContainerStatus?.ContainerID as string
    assert.equal(await until('the secret file', async () => { const r = await dockerCli(sock, ['exec', cid, 'cat', '/run/secrets/pw2']); return r.status === 0 ? r.stdout : undefined }), SECRET)
  })

  await t.test('autolock off: no key, the data key kept plain, not locked after a restart; leave removes the keys', async () => {
    await docker('swarm', 'update', '--autolock=false')
    assert.match(await fails(['swarm', 'unlock-key']), /no unlock key is set/)
    assert.match(await fails(['swarm', 'unlock-key', '--rotate']), /autolock is not turned on/)
    assert.deepEqual(Object.keys(JSON.parse(readFileSync(keysPath, 'utf8')) as object), ['dek'])
    await restart()
    assert.equal((await docker('info', '--format', '{{.Swarm.LocalNodeState}}')).trim(), 'active')
    const cfg = (await request(sock, 'GET', '/configs/cfg')).json() as { Spec: { Data: string } }
    assert.equal(Buffer.from(cfg.Spec.Data, 'base64').toString(), 'config-body-text')
    await docker('swarm', 'leave', '--force')
    assert.throws(() => readFileSync(keysPath))
  })
})
