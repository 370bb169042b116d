// What the network routes need (NetworkService implements it): method-only, in lib/network's vocabulary.
import type { Attachment, EndpointRequest, NetworkRecord, SandboxRecord } from '../../network/model.js'
import type { CreateNetworkRequest } from '../../network/network-create.js'

export interface NetworkBackend {
  /** Every network a client sees. */
  all (): NetworkRecord[]
  /** By name, ID or unique ID prefix; throws not-found. */
  get (ref: string): NetworkRecord
  /** The containers attached to a network, with their endpoints. */
  endpointsOf (networkId: string): Array<{ sb: SandboxRecord, a: Attachment }>
  /** How many of its endpoints belong to running containers. */
  activeEndpoints (networkId: string): number
  create (req: CreateNetworkRequest): Promise<{ id: string, warning: string }>
  remove (ref: string): Promise<void>
  connect (networkRef: string, containerRef: string, ep: EndpointRequest): Promise<void>
  disconnect (networkRef: string, containerRef: string, force: boolean): Promise<void>
  /** Removes the unused networks `keep` chooses; their names. */
  prune (keep: (n: NetworkRecord) => boolean): Promise<string[]>
}
