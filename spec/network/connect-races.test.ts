// docker network connect racing the container's exit or its start, against one daemon process, many times. dockerd
// connects a container that has exited as a stopped one (the endpoint recorded, attached at its next start) and one
// that is starting once it runs; it never answers 409 for either. Before: a connect that landed while the
// container's namespace was gone (its monitor had removed it at the exit, or had not made it yet at the start) was
// refused with 409 "while it starts or stops". Whatever the timing: 200, a running container shows the network with
// an address and the network lists it, a stopped one shows it with none and gets an address at its next start.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { containerSkipReason, importBusybox, createContainer, type Reply } from '../helpers/engine.js'
import { DaemonProcess } from '../helpers/daemon-process.js'
import { until } from '../helpers/poll.js'

const skip = containerSkipReason()
if (skip !== null) process.stdout.write(`# skipping connect race tests: ${skip}\n`)

const daemon = new DaemonProcess({ errorsCarryMessage: true })
const { call, assertAlive } = daemon

before(async () => {
  if (skip !== null) return
  await daemon.start()
  await importBusybox(daemon.sock)
  for (const name of ['ra', 'rb']) assert.equal((await call('POST', '/networks/create', { Name: name })).status, 201)
})
after(async () => { await daemon.cleanup() })

interface Inspect { State: { Running: boolean, Status: string }, NetworkSettings: { Networks: Record<string, { IPAddress: string }> } }

async function inspect (id: string): Promise<Inspect> {
  const r = await call('GET', `/containers/${id}/json`)
  assert.equal(r.status, 200, r.text)
  return r.json() as Inspect
}

async function listedBy (network: string, id: string): Promise<boolean> {
  return Object.keys(((await call('GET', `/networks/${network}`)).json() as { Containers: Record<string, unknown> | null }).Containers ?? {}).includes(id)
}

/**
 * What a container shows of network `rb` agrees with its state: recorded; when running (and `settled`: not exiting
 * meanwhile, which would make inspect and the network's list disagree for a moment) an address, listed by the network.
 */
async function consistent (id: string, what: string, settled = true): Promise<Inspect> {
  const ci = await inspect(id)
  const ep = ci.NetworkSettings.Networks.rb
  assert.ok(ep !== undefined, `${what}: the connect answered 200 and the container does not show the network: ${JSON.stringify(ci.NetworkSettings.Networks)}`)
  if (ci.State.Running && settled) {
    assert.notEqual(ep.IPAddress, '', `${what}: a running container's endpoint without an address`)
    assert.equal(await listedBy('rb', id), true, `${what}: a running container the network does not list`)
  }
  return ci
}

/** The container has exited (its exit applied: a wait answers). */
async function exited (id: string): Promise<void> {
  assert.equal((await call('POST', `/containers/${id}/wait?condition=not-running`)).status, 200)
}

function expectConnected (r: Reply, what: string): void {
  // before: 409 "cannot connect container … while it starts or stops: try again"
  assert.equal(r.status, 200, `${what}: ${r.status} ${r.text}`)
}

test('connect racing the container\'s exit: always 200, recorded as a stopped container\'s endpoint, attached at its next start', { skip: skip ?? false, timeout: 240_000 }, async () => {
  for (let round = 0; round < 40; round++) {
    const what = `round ${round}`
    // exits on its own the first time (in 0–40 ms), or is killed; runs for good the next time
    const id = await createContainer(daemon.sock, {
      Image: 'busybox',
      Cmd: ['sh', '-c', `if [ -e /again ]; then exec sleep 600; fi; touch /again; ${round % 2 === 0 ? `usleep ${(round % 10) * 4000}` : 'exec sleep 600'}`],
      HostConfig: { NetworkMode: 'ra' }
    })
    assert.equal((await call('POST', `/containers/${id}/start`)).status, 204)
    const killed = round % 2 === 1 ? call('POST', `/containers/${id}/kill`) : Promise.resolve(null)
    await new Promise((resolve) => setTimeout(resolve, (round % 5) * 3))
    expectConnected(await call('POST', '/networks/rb/connect', { Container: id }), what)
    const k = await killed
    if (k !== null) assert.ok([204, 409].includes(k.status), `${what}: kill ${k.status} ${k.text}`)
    await consistent(id, `${what}, right after`, false)
    await exited(id)
    const stopped = await consistent(id, `${what}, exited`)
    assert.equal(stopped.State.Running, false, what)
    assert.equal(await listedBy('rb', id), false, `${what}: a stopped container is not listed by the network`)
    // attached at its next start
    assert.equal((await call('POST', `/containers/${id}/start`)).status, 204, what)
    await until(`${what}: running again`, async () => (await inspect(id)).State.Running, 10_000)
    const again = await consistent(id, `${what}, started again`)
    assert.equal(again.State.Running, true, what)
    assert.equal((await call('DELETE', `/containers/${id}?force=1`)).status, 204)
  }
  await assertAlive('after the exits')
})

test('connect racing the container\'s start: always 200, the running container has an address on the network', { skip: skip ?? false, timeout: 120_000 }, async () => {
  for (let round = 0; round < 20; round++) {
    const what = `round ${round}`
    const id = await createContainer(daemon.sock, { Image: 'busybox', Cmd: ['sleep', '600'], HostConfig: { NetworkMode: 'ra' } })
    const started = call('POST', `/containers/${id}/start`)
    await new Promise((resolve) => setTimeout(resolve, (round % 10) * 3))
    expectConnected(await call('POST', '/networks/rb/connect', { Container: id }), what)
    assert.equal((await started).status, 204, what)
    const ci = await consistent(id, what)
    assert.equal(ci.State.Running, true, what)
    assert.equal((await call('DELETE', `/containers/${id}?force=1`)).status, 204)
  }
  await assertAlive('after the starts')
})
