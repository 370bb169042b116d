// A create and a start write one record each: the container's own, which carries a copy of its networking's (mode,
// endpoints with their static addresses and aliases, the ports asked for; at a start its addresses and namespace).
// Networking writes a file of its own only for its other changes (a connect, a rename, a stop). A restart takes the
// container's copy when it is newer than that file, or when there is none (or a power loss left it empty).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, request, createContainer } from '../helpers/engine.js'
import { firstEngineWithNetwork } from './restart-fixture.js'

const skip = containerSkipReason()

test('a created container\'s networking comes back from its own record at a restart (no file of its own, or an empty one)', { skip: skip ?? false }, async (t) => {
  const { dir, n, first, sub } = await firstEngineWithNetwork(t, 'restored')
  const body = (ip: string): Record<string, unknown> => ({
    Image: 'busybox',
    Cmd: ['sh', '-c', 'ip -4 -o addr show eth0'],
    HostConfig: { NetworkMode: 'restored' },
    NetworkingConfig: { EndpointsConfig: { restored: { Aliases: ['web'], IPAMConfig: { IPv4Address: ip } } } }
  })
  const never = await createContainer(first.socket, body(`${sub}.77`), 'restored1')
  const emptied = await createContainer(first.socket, body(`${sub}.78`), 'restored2')
  const file = (id: string): string => join(first.dataRoot, 'network', 'sandboxes', `${id}.json`)
  assert.equal(existsSync(file(never)), false, 'a create writes no networking file of its own')
  await first.close()
  // as a power loss after the file's rename, before its data reached the disk
  writeFileSync(file(emptied), '')

  const second = await startEngine(t, { dir, options: n })
  for (const [id, ip] of [[never, `${sub}.77`], [emptied, `${sub}.78`]] as const) {
    const inspected = await request(second.socket, 'GET', `/containers/${id}/json`)
    assert.equal(inspected.status, 200, inspected.text)
    const nets = (inspected.json() as { NetworkSettings: { Networks: Record<string, { IPAMConfig: { IPv4Address: string } | null, Aliases: string[] | null }> } }).NetworkSettings.Networks
    assert.deepEqual(Object.keys(nets), ['restored'])
    assert.equal(nets.restored?.IPAMConfig?.IPv4Address, ip)
    assert.ok(nets.restored?.Aliases?.includes('web'), JSON.stringify(nets.restored))
    const started = await request(second.socket, 'POST', `/containers/${id}/start`)
    assert.equal(started.status, 204, started.text)
    assert.equal(((await request(second.socket, 'POST', `/containers/${id}/wait`)).json() as { StatusCode: number }).StatusCode, 0)
    const logs = await request(second.socket, 'GET', `/containers/${id}/logs?stdout=1`)
    assert.match(logs.body.toString('latin1'), new RegExp(`inet ${ip.replaceAll('.', '\\.')}/24`))
    assert.equal((await request(second.socket, 'DELETE', `/containers/${id}`)).status, 204)
  }
})

test('a running container\'s networking, written only in its own record at its start, is intact after a restart', { skip: skip ?? false }, async (t) => {
  const { dir, n, first, sub } = await firstEngineWithNetwork(t, 'kept')
  const ip = `${sub}.90`
  const id = await createContainer(first.socket, { Image: 'busybox', Cmd: ['sleep', '600'], HostConfig: { NetworkMode: 'kept' }, NetworkingConfig: { EndpointsConfig: { kept: { IPAMConfig: { IPv4Address: ip } } } } }, 'kept1')
  // a stop writes networking's own file (not running); the next start writes only the container's record
  assert.equal((await request(first.socket, 'POST', `/containers/${id}/start`)).status, 204)
  assert.equal((await request(first.socket, 'POST', `/containers/${id}/stop?t=0`)).status, 204)
  assert.equal((await request(first.socket, 'POST', `/containers/${id}/start`)).status, 204)
  const file = join(first.dataRoot, 'network', 'sandboxes', `${id}.json`)
  for (let i = 0; i < 100 && !existsSync(file); i++) await new Promise((resolve) => setTimeout(resolve, 20))
  assert.equal((JSON.parse(readFileSync(file, 'utf8')) as { running: boolean }).running, false, 'networking\'s own file is as the stop left it')
  // (the container's monitor outlives the daemon, as after a kill -9)
  await first.close()

  const second = await startEngine(t, { dir, options: n })
  const inspected = await request(second.socket, 'GET', `/containers/${id}/json`)
  assert.equal(inspected.status, 200, inspected.text)
  const j = inspected.json() as { State: { Running: boolean }, NetworkSettings: { Networks: Record<string, { IPAddress: string }> } }
  assert.equal(j.State.Running, true)
  assert.equal(j.NetworkSettings.Networks.kept?.IPAddress, ip)
  const onNet = await request(second.socket, 'GET', '/networks/kept')
  assert.ok(Object.keys((onNet.json() as { Containers: Record<string, unknown> }).Containers).includes(id), onNet.text)
  // its address is held: another container cannot take it
  const other = await request(second.socket, 'POST', '/containers/create?name=kept2', { body: { Image: 'busybox', Cmd: ['true'], HostConfig: { NetworkMode: 'kept' }, NetworkingConfig: { EndpointsConfig: { kept: { IPAMConfig: { IPv4Address: ip } } } } } })
  assert.equal(other.status, 201, other.text)
  const started = await request(second.socket, 'POST', '/containers/kept2/start')
  assert.notEqual(started.status, 204, 'the running container\'s address was given again')
  assert.equal((await request(second.socket, 'DELETE', '/containers/kept2?force=1')).status, 204)
  assert.equal((await request(second.socket, 'DELETE', `/containers/${id}?force=1`)).status, 204)
})
