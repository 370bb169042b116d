// What the system routes (/_ping, /version, /info, /system/df, /events) need from the engine: method-only, typed.
import type { EventFilters, EventSubscription } from '../../events/event-bus.js'

export interface VersionInfo {
  berthVersion: string
  gitCommit: string
  nodeVersion: string
  kernelVersion: string
  arch: string
  buildTime: string
  runtimeName: string
  runtimeVersion: string
}

/** What GET /info reports that is not fixed: the engine's counts, the host's facts, the runtime, the swarm. */
export interface SystemInfo {
  /** The engine's ID (its data root). */
  id: string
  containers: { total: number, running: number, paused: number }
  images: number
  ipv4Forwarding: boolean
  /** Whether the daemon logs at debug level. */
  debug: boolean
  /** Containers' default log driver. */
  loggingDriver: string
  cgroupVersion: '1' | '2'
  kernelVersion: string
  /** The distribution's PRETTY_NAME and VERSION_ID. */
  operatingSystem: string
  osVersion: string
  architecture: string
  cpus: number
  memTotal: number
  dataRoot: string
  hostname: string
  /** The default runtime: its name and version. */
  runtime: { name: string, version: string }
  /**
   * Every runtime containers may name: its binary, the options it gets before each command, and its OCI features
   * document as compact JSON text when it prints one (`<binary> features`).
   */
  runtimes: Array<{ name: string, path: string, args: string[], features?: string }>
  /** The swarm's section of /info, as lib/swarm spells it. */
  swarm: Record<string, unknown>
  warnings: string[]
}

/** What /_ping needs. */
export interface PingBackend {
  /** The Swarm header: 'active' when the node is in a swarm, else 'inactive'. */
  swarmState (): string
}

export interface SystemBackend {
  versionInfo (): VersionInfo
  systemInfo (): Promise<SystemInfo>
  /** GET /system/df's reply as JSON text. */
  diskUsage (version: string, types: string[]): Promise<string>
  /** Events matching the filters from now on (from `sinceNs` on, as far as the bus remembers). */
  subscribeEvents (filters: EventFilters, sinceNs: bigint | undefined): EventSubscription
}
