// What the containers floor needs of networking (lib/network's NetworkService implements it): method-only.
import type { EtcInput, SandboxSetup, Teardown } from '../network/sandboxes.js'
import type { SandboxRequest } from '../network/sandbox-config.js'
import type { SandboxView } from '../network/model.js'

export interface ContainerNetworking {
  /** Records a new container's mode, endpoints and ports (create); the create's warnings. */
  register: (o: SandboxRequest) => Promise<string[]>
  /** Forgets a removed container. */
  unregister: (id: string) => Promise<void>
  rename: (id: string, name: string) => Promise<void>
  /** Plans the container's namespace, endpoints, ports and /etc files before its process starts. */
  setup: (id: string, etc: EtcInput) => Promise<SandboxSetup>
  /** Resolves once the sandbox's record (written while the runtime starts the process) is on disk. */
  recorded: (id: string) => Promise<void>
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
