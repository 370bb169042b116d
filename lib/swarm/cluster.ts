// The swarm itself: init, join (refused: one node), leave, inspect, update (join tokens, autolock), the unlock key and
// unlock, and /info's Swarm section. Loading the state and keys at start is here too: a swarm autolocked before a
// restart stays locked (every swarm route answers dockerd's 503) until `docker swarm unlock`.
import os from 'node:os'
import { conflict, describeError, invalidArgument, unavailable } from '../errors.js'
import { levelLogger, logger } from '../log.js'
import { parsePrefix } from '../network/cidr.js'
import { joinToken, swarmId } from './ids.js'
import type { SwarmRecord } from './model.js'
import { clusterSpecOf } from './cluster-spec.js'
import type { PublishedPorts } from './published-ports.js'
import { sealLegacyData } from './secrets.js'
import { activeSwarm, rpc, type SwarmContext } from './swarm-context.js'
import type { TaskFiles } from './task-files.js'
import type { Tasks } from './tasks.js'
import { toInfoSwarm, toSwarm } from './wire.js'

const log = logger('swarm')
const ops = levelLogger('swarm')

type Obj = Record<string, unknown>

/** init's address pools, subnet size and data path port, checked as dockerd checks them (its defaults when unset). */
function addressPools (body: Obj): { defaultAddrPool: string[], subnetSize: number, dataPathPort: number } {
  const given = body.DefaultAddrPool
  if (given !== undefined && given !== null && (!Array.isArray(given) || given.some((p) => typeof p !== 'string'))) {
    throw invalidArgument('json: cannot unmarshal into Go struct field InitRequest.DefaultAddrPool of type []string')
  }
  for (const k of ['SubnetSize', 'DataPathPort'] as const) {
    const v = body[k]
    if (v !== undefined && v !== null && (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0xffffffff)) {
      throw invalidArgument(`json: cannot unmarshal ${typeof v} into Go struct field InitRequest.${k} of type uint32`)
    }
  }
  const size = typeof body.SubnetSize === 'number' && body.SubnetSize !== 0 ? body.SubnetSize : 24
  const pools = Array.isArray(given) && given.length > 0 ? (given as string[]).map((p) => p.trim()) : null
  if (pools !== null) {
    if (size > 29) throw invalidArgument(`subnet size is out of range: ${size}`)
    for (const p of pools) {
      const cidr = parsePrefix(p)
      if (cidr === null) throw invalidArgument(`invalid base pool ${p}: invalid CIDR address: ${p}`)
      if (size < cidr.bits) throw invalidArgument(`invalid CIDR: ${JSON.stringify(p)}. Subnet size is too small for pool: ${size}`)
    }
  }
  let port = typeof body.DataPathPort === 'number' ? body.DataPathPort : 0
  if (port === 0) port = 4789
  else if (port < 1024 || port > 49151) throw invalidArgument(`Datapath port number is not in valid range (1024-49151) : ${port}`)
  return { defaultAddrPool: pools ?? ['10.0.0.0/8'], subnetSize: pools === null ? 24 : size, dataPathPort: port }
}

function defaultAddr (): string {
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address
  }
  return '127.0.0.1'
}

export class Cluster {
  private readonly c: SwarmContext
  private readonly tasks: Tasks
  private readonly ports: PublishedPorts
  private readonly files: TaskFiles

  constructor (c: SwarmContext, o: { tasks: Tasks, ports: PublishedPorts, files: TaskFiles }) {
    this.c = c
    this.tasks = o.tasks
    this.ports = o.ports
    this.files = o.files
  }

  /** Reads the swarm's state and keys, touching no task; true when there is an unlocked swarm to run. */
  async load (): Promise<boolean> {
    const { store, keys } = this.c
    await store.load()
    const s = store.state.swarm
    if (s === null) { await this.files.release(); return false }
    const state = await keys.load()
    if (state === 'locked') { log('the swarm is locked: waiting for docker swarm unlock'); return false }
    if (state === 'none') await keys.create(s.spec.autoLockManagers) // a state written before the swarm had keys
    if (sealLegacyData(store.state, keys)) await store.commit()
    return true
  }

  /**
   * At a start outside a swarm whose state file is there (this node was in one): what a leave cut short by a crash
   * did not finish goes now (its state went first): task containers, the swarm's overlay networks. Never rejects.
   */
  async finishLeave (): Promise<void> {
    if (this.c.store.state.swarm !== null) return
    try {
      await this.tasks.removeStrays()
      const gone = await this.c.networks.removeOverlays()
      if (gone.length > 0) ops.info('finished a swarm leave cut short: overlay networks removed: %s', gone.join(', '))
    } catch (err) { ops.warn('finishing a swarm leave cut short: %s', describeError(err)) }
  }

  infoSection (): Obj {
    if (this.c.store.state.swarm !== null && this.c.keys.locked) return { NodeID: '', NodeAddr: '', LocalNodeState: 'locked', ControlAvailable: false, Error: '', RemoteManagers: null }
    return toInfoSwarm(this.c.store.state.swarm)
  }

  async init (body: Obj): Promise<string> {
    const { store, keys } = this.c
    if (store.state.swarm !== null) throw unavailable('This node is already part of a swarm. Use "docker swarm leave" to leave this swarm and join another one.')
    const pools = addressPools(body)
    const listen = typeof body.ListenAddr === 'string' && body.ListenAddr !== '' ? body.ListenAddr : '0.0.0.0:2377'
    let advertise = typeof body.AdvertiseAddr === 'string' ? body.AdvertiseAddr.replace(/:\d+$/, '') : ''
    if (advertise === '') {
      const host = listen.replace(/:\d+$/, '')
      advertise = host !== '0.0.0.0' && host !== '' && /^[\d.]+$/.test(host) ? host : defaultAddr()
    }
    if (!/^[\d.]+$/.test(advertise)) {
      const iface = os.networkInterfaces()[advertise]?.find((a) => a.family === 'IPv4')
      if (iface === undefined) throw invalidArgument(`advertise address must be a non-zero IP address or network interface (with optional port number)`)
      advertise = iface.address
    }
    const spec = clusterSpecOf(body.Spec)
    const nodeId = swarmId()
    const s: SwarmRecord = {
      ...store.newMeta(swarmId()),
      spec,
      joinTokens: { worker: joinToken(), manager: joinToken() },
      node: { ...store.newMeta(nodeId), spec: { labels: {}, role: 'manager', availability: 'active' } },
      ...pools,
      listenAddr: listen,
      advertiseAddr: advertise
    }
    await keys.create(spec.autoLockManagers)
    store.state.swarm = s
    await store.commit()
    this.c.events.emit('node', 'create', nodeId, { name: os.hostname() })
    // the routing mesh's network, as dockerd makes it at init (the first subnet of the pools)
    await this.c.networks.createIngress().catch((err) => { ops.warn('the ingress network was not created: %s', describeError(err)) })
    log('swarm initialised: node %s', nodeId)
    this.c.orchestrator.kick()
    return nodeId
  }

  join (): never {
    if (this.c.store.state.swarm !== null) throw unavailable('This node is already part of a swarm. Use "docker swarm leave" to leave this swarm and join another one.')
    throw invalidArgument('Berth runs a single-node swarm: joining another swarm is not supported; use "docker swarm init" on this node')
  }

  async leave (force: boolean): Promise<void> {
    const { store, keys } = this.c
    const s = store.state.swarm
    if (s === null) throw unavailable('This node is not part of a swarm')
    if (!force) throw unavailable('You are attempting to leave the swarm on a node that is participating as a manager. Removing the last manager erases all current state of the swarm. Use `--force` to ignore this message. ')
    const tasks = Object.values(store.state.tasks)
    const wasLocked = keys.locked
    store.state.swarm = null
    store.state.services = {}
    store.state.tasks = {}
    store.state.secrets = {}
    store.state.configs = {}
    await store.commit()
    await keys.remove()
    if (!wasLocked) {
      await this.c.orchestrator.settle()
      // a task whose container was being made or started when the state went ends that start first
      await this.c.orchestrator.startsSettled()
    }
    await Promise.all(tasks.map(async (t) => { await this.tasks.removeContainer(t) }))
    // and no task container stays behind (dockerd removes every container of its node's tasks at a leave)
    await this.tasks.removeStrays()
    await this.ports.closeAll()
    // the swarm's overlay networks go with it (dockerd's); one a running non-task container still uses stays
    const gone = await this.c.networks.removeOverlays()
    await this.files.release()
    log('left the swarm: overlay networks removed: %s', gone.join(', '))
  }

  inspect (): Obj { return toSwarm(activeSwarm(this.c)) }

  /** `GET /swarm/unlockkey`: the key as dockerd prints it, '' without autolock. */
  unlockKey (): { UnlockKey: string } {
    activeSwarm(this.c)
    return { UnlockKey: this.c.keys.humanUnlockKey() }
  }

  /** `POST /swarm/unlock`: the data key unwrapped, then the swarm resumes as after a start. */
  async unlock (key: string): Promise<void> {
    const { store, keys } = this.c
    if (store.state.swarm === null) throw unavailable('This node is not part of a swarm')
    keys.unlock(key)
    if (sealLegacyData(store.state, keys)) await store.commit()
    log('the swarm is unlocked')
    this.c.orchestrator.recover()
  }

  async update (version: number | undefined, q: { rotateWorker: boolean, rotateManager: boolean, rotateUnlockKey: boolean }, body: Obj): Promise<void> {
    const s = activeSwarm(this.c)
    if (version === undefined) throw invalidArgument('invalid swarm version \'\': strconv.ParseUint: parsing "": invalid syntax')
    if (version !== s.version) throw conflict(rpc('Unknown', 'update out of sequence'))
    const spec = clusterSpecOf(body, true)
    const autolockBefore = s.spec.autoLockManagers
    s.spec = spec
    const autolock = s.spec.autoLockManagers
    if (autolock !== autolockBefore || (autolock && q.rotateUnlockKey)) await this.c.keys.setAutolock(autolock, q.rotateUnlockKey)
    if (q.rotateWorker) s.joinTokens.worker = joinToken()
    if (q.rotateManager) s.joinTokens.manager = joinToken()
    this.c.store.touch(s)
    await this.c.store.commit()
    this.c.orchestrator.kick()
  }

  /** The address pools overlay networks take their subnets from (init's), undefined outside a swarm. */
  overlayPools (): Array<{ base: string, size: number }> | undefined {
    const s = this.c.store.state.swarm
    if (s === null) return undefined
    const size = s.subnetSize ?? 24
    return (s.defaultAddrPool ?? ['10.0.0.0/8']).map((base) => ({ base, size }))
  }
}
