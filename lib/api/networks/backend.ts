// What the network routes need (NetworkApi in lib/network implements it): method-only. (Its wire shapes still come
// from lib/network/network-wire.ts: they move to lib/api/networks/ next.)
import type { Filters } from '../../http/query.js'

export interface NetworkBackend {
  listNetworks (filters: Filters): Promise<unknown[]>
  inspectNetwork (ref: string, scope: string): Promise<Record<string, unknown>>
  createNetwork (body: Record<string, unknown>): Promise<{ Id: string, Warning: string }>
  removeNetwork (ref: string): Promise<void>
  connectNetwork (ref: string, body: Record<string, unknown>): Promise<void>
  disconnectNetwork (ref: string, body: Record<string, unknown>): Promise<void>
  pruneNetworks (filters: Filters): Promise<{ NetworksDeleted: string[] }>
}
