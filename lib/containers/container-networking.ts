// What the containers floor needs of networking (lib/network's NetworkService implements it): method-only.
import type { EtcInput, SandboxSetup, Teardown } from '../network/sandboxes.js'
import type { SandboxRequest } from '../network/sandbox-config.js'
import type { SandboxRecord, SandboxView } from '../network/model.js'

export interface ContainerNetworking {
  /**
   * Records a new container's mode, endpoints and ports (create); the create's warnings. Not written by networking:
   * the container's own record carries it (record()).
   */
  register: (o: SandboxRequest) => Promise<string[]>
  /** Boot: the copy a container's own record carries, taken when it is newer than networking's own file (or there is none). */
  restore: (id: string, record: SandboxRecord) => void
  /** Forgets a removed container. */
  unregister: (id: string) => Promise<void>
  rename: (id: string, name: string) => Promise<void>
  /**
   * Plans the container's namespace, endpoints, ports and /etc files before its process starts. Its change is not
   * written by networking: the container's next record (the start's) carries it (record()).
   */
  setup: (id: string, etc: EtcInput) => Promise<SandboxSetup>
  /** The container's networking record as it stands: every record of the container carries a copy (restore()). */
  record: (id: string) => SandboxRecord | undefined
  /** Lets a stopped container's networking go ('monitor': the monitor removed its namespace already). */
  release: (id: string, teardown?: Teardown, persist?: boolean) => Promise<void>
  /** The container's monitor runs: its resolver is served from now on. */
  monitorStarted: (id: string) => void
  /** Removes a legacy link by its alias; false when the container has none of that alias. */
  removeLink: (id: string, alias: string) => Promise<boolean>
  /** The container's networking as inspect and the list show it. */
  view: (id: string) => SandboxView | undefined
  /** Moves on every connect and disconnect (the list's cached items are checked against it). */
  readonly seq: number
}
