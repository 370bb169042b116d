// The swarm of one node, composed: the store and keys, the orchestrator keeping services at their spec, and one object
// per resource the routes serve (cluster, nodes, services, tasks, secrets, configs). The engine calls the few methods
// here (start, stop, /info, what networking asks of the swarm); the routes call the resources.
import { Cluster } from './cluster.js'
import { Nodes, nodeFacts } from './nodes.js'
import { Orchestrator } from './orchestrator.js'
import { PublishedPorts } from './published-ports.js'
import { Secrets } from './secrets.js'
import { serviceUpdateAttributes } from './service-events.js'
import { Services } from './services.js'
import { SwarmStore } from './store.js'
import type { SwarmContext } from './swarm-context.js'
import { SwarmKeys } from './swarm-keys.js'
import type { SwarmEvents, TaskContainers, TaskNetworks } from './task-containers.js'
import { TaskFiles } from './task-files.js'
import { Tasks } from './tasks.js'
import { isTerminal } from './model.js'
import type { Wire } from './wire.js'

export { NOT_MANAGER, SWARM_LOCKED } from './swarm-context.js'

/** How long a close lets the task starts under way end before the container service closes. */
const STARTS_CLOSE_MS = 10_000

export interface SwarmManagerOptions {
  dataRoot: string
  execRoot: string
  containers: TaskContainers
  networks: TaskNetworks
  events: SwarmEvents
  engineVersion: string
  /** The swarm's store when the engine made it first (to read the state before the swarm starts: /_ping's header). */
  store?: SwarmStore
}

export class SwarmManager {
  readonly store: SwarmStore
  readonly orchestrator: Orchestrator
  readonly cluster: Cluster
  readonly nodes: Nodes
  readonly services: Services
  readonly tasks: Tasks
  readonly secrets: Secrets
  readonly configs: Secrets
  private readonly ports: PublishedPorts
  private readonly files: TaskFiles

  constructor (o: SwarmManagerOptions) {
    const store = o.store ?? new SwarmStore(o.dataRoot)
    const keys = new SwarmKeys(store.dir)
    const files = new TaskFiles(o.execRoot)
    const facts = nodeFacts(o.engineVersion)
    this.store = store
    this.files = files
    this.ports = new PublishedPorts({ state: () => store.state, tasksOf: (id) => this.orchestrator.tasksOf(id), containers: o.containers })
    this.orchestrator = new Orchestrator({
      store,
      containers: o.containers,
      networks: o.networks,
      taskFiles: async (t) => await files.write(store.state, keys, t),
      removeFiles: async (id) => { await files.remove(id) },
      removeOtherFiles: async (known) => { await files.removeOthers(known) },
      nodeAttributes: () => this.nodes.attributes(),
      nodeResources: { nanoCpus: facts.nanoCpus, memoryBytes: facts.memoryBytes },
      afterPass: () => { void this.ports.sync() },
      serviceChanged: (svc, before) => { o.events.emit('service', 'update', svc.id, serviceUpdateAttributes(before, svc)) }
    })
    const c: SwarmContext = { store, keys, orchestrator: this.orchestrator, containers: o.containers, networks: o.networks, events: o.events }
    this.nodes = new Nodes(c, facts)
    this.services = new Services(c, this.ports)
    this.tasks = new Tasks(c, this.services, files)
    this.cluster = new Cluster(c, { tasks: this.tasks, ports: this.ports, files })
    this.secrets = new Secrets(c, 'secret')
    this.configs = new Secrets(c, 'config')
  }

  /**
   * Loads the state and resumes: running task containers are re-adopted, dead ones replaced. An autolocked swarm
   * stays locked (every swarm route answers dockerd's 503, task containers are left as they are) until unlocked.
   */
  async init (): Promise<void> {
    if (await this.load()) this.recover()
  }

  /** Reads the swarm's state and keys, touching no task; true when there is an unlocked swarm to run. */
  async load (): Promise<boolean> { return await this.cluster.load() }

  /** Takes the tasks over once their containers are recovered (after load() found a swarm). */
  recover (): void { this.orchestrator.recover() }

  /** Once the containers are recovered, outside a swarm: finishes a leave a crash cut short (never rejects). */
  async finishLeave (): Promise<void> { await this.cluster.finishLeave() }

  /**
   * Ends the swarm's work: no pass, timer, task start or stop, removal or state write follows the resolution of
   * this promise. What the close cuts short is finished at the next start from the state on disk (a task container
   * left created is made again, one that runs is adopted, a stop is asked again). `containersClose` runs once the task
   * starts under way have ended (at most 10 s): the engine closes its container service there, which ends the waits
   * of the swarm's stops (their grace periods are not waited out); a create it cut short would leave its root
   * filesystem behind.
   */
  async close (containersClose?: () => Promise<void>): Promise<void> {
    const closed = this.orchestrator.close()
    await this.orchestrator.startsSettledWithin(STARTS_CLOSE_MS)
    await containersClose?.()
    await closed
    await this.ports.close()
    // a task that may still run keeps its secret and config files; otherwise nothing needs their tmpfs
    if (!Object.values(this.store.state.tasks).some((t) => !isTerminal(t.status.state))) await this.files.release()
    await this.store.close()
  }

  get active (): boolean { return this.store.state.swarm !== null }

  /** /info's Swarm section. */
  infoSection (): Wire { return this.cluster.infoSection() }

  /** Why networking must not remove a swarm network (a service uses it), undefined when it can go. */
  networkRemovalBlocked (n: { id: string, ingress: boolean }): string | undefined { return this.services.networkRemovalBlocked(n) }

  /** The address pools overlay networks take their subnets from (init's), undefined outside a swarm. */
  overlayPools (): Array<{ base: string, size: number }> | undefined { return this.cluster.overlayPools() }

  /** Whether a container is a task container whose service was removed (shutting down, or a stray). */
  taskContainerLeaving (containerId: string): boolean { return this.tasks.containerLeaving(containerId) }
}
