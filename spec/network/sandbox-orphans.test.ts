// A container's networking record (network/sandboxes/<id>.json) is deleted after its removal has answered: a daemon
// killed in between leaves a networking record of no container. The next start drops it, and the static address it named is free again.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, request, createContainer } from '../helpers/engine.js'
import { firstEngineWithNetwork } from './restart-fixture.js'

const skip = containerSkipReason()

test('a networking record of no container is dropped at start, and its static address is free again', { skip: skip ?? false }, async (t) => {
  const { dir, n, first, sub } = await firstEngineWithNetwork(t, 'orph')
  const ip = `${sub}.77`
  const body = { Image: 'busybox', Cmd: ['true'], HostConfig: { NetworkMode: 'orph' }, NetworkingConfig: { EndpointsConfig: { orph: { IPAMConfig: { IPv4Address: ip } } } } }
  const id = await createContainer(first.socket, body, 'orphan1')
  const started = await request(first.socket, 'POST', `/containers/${id}/start`)
  assert.equal(started.status, 204, started.text)
  const waited = await request(first.socket, 'POST', `/containers/${id}/wait`)
  assert.equal(waited.status, 200, waited.text)
  // (networking writes its own file at the stop, after the exit is recorded)
  const sandbox = join(first.dataRoot, 'network', 'sandboxes', `${id}.json`)
  for (let i = 0; i < 100 && !existsSync(sandbox); i++) await new Promise((resolve) => setTimeout(resolve, 20))
  assert.ok(existsSync(sandbox))
  // as a kill -9 after the removal answered, before the record's file was deleted: the container is gone, its
  // networking record is not
  await first.close()
  rmSync(join(first.dataRoot, 'containers', id), { recursive: true, force: true })

  const second = await startEngine(t, { dir, options: n })
  assert.equal(existsSync(sandbox), false, 'the networking record of no container is deleted')
  const inspected = await request(second.socket, 'GET', '/networks/orph')
  assert.equal(inspected.status, 200, inspected.text)
  assert.deepEqual((inspected.json() as { Containers: Record<string, unknown> }).Containers, {})
  // the address it held is free: a new container takes it and runs
  const again = await createContainer(second.socket, body, 'orphan2')
  const run = await request(second.socket, 'POST', `/containers/${again}/start`)
  assert.equal(run.status, 204, run.text)
  const code = await request(second.socket, 'POST', `/containers/${again}/wait`)
  assert.equal((code.json() as { StatusCode: number }).StatusCode, 0)
  assert.equal((await request(second.socket, 'DELETE', `/containers/${again}`)).status, 204)
  // a removed container's networking record goes after the reply
  const again2 = join(second.dataRoot, 'network', 'sandboxes', `${again}.json`)
  for (let i = 0; i < 100 && existsSync(again2); i++) await new Promise((resolve) => setTimeout(resolve, 20))
  assert.equal(existsSync(again2), false, 'the removed container\'s networking record is deleted')
})
