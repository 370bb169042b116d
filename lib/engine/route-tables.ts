// The Engine API's route tables, each over the one method-only backend it needs (lib/api/<family>/backend.ts), built
// from the engine's parts: what serves each family is decided here and nowhere else.
import type { Route } from '../http/router.js'
import type { ApiHandler } from '../http/api-context.js'
import type { EventBus, EventType } from '../events/event-bus.js'
import type { ImageService } from '../image/image-service.js'
import type { Distribution } from '../distribution/distribution.js'
import type { ContainerRuntime } from '../runtime/container-runtime.js'
import type { NetworkService } from '../network/network-service.js'
import type { VolumeService } from '../volumes/volume-service.js'
import type { ContainerVolumes } from '../volumes/container-volumes.js'
import type { ContainerService } from '../containers/container-service.js'
import type { ContainerHandle } from '../containers/container-handle.js'
import type { ContainerList } from '../containers/container-list.js'
import type { ExecService } from '../containers/exec-service.js'
import type { SwarmManager } from '../swarm/manager.js'
import type { BuildBackend } from '../build/backend.js'
import { ContainerCommit } from '../containers/commit.js'
import { ContainerFiles } from '../containers/container-files.js'
import { ContainerStats } from '../containers/container-stats.js'
import { BuildRunner, DEFAULT_CONTEXT_LIMIT } from '../build/build-runner.js'
import { ENGINE_VERSION } from '../api/api-version.js'
import { systemRoutes } from '../api/system/routes.js'
import { containerRoutes } from '../api/containers/routes.js'
import { containerFileRoutes, containerStatsRoutes } from '../api/containers/files-routes.js'
import { commitRoutes } from '../api/containers/commit-routes.js'
import { execRoutes } from '../api/exec/routes.js'
import { imageRoutes } from '../api/images/routes.js'
import { imageArchiveRoutes } from '../api/images/archive-routes.js'
import { imageDistributionRoutes } from '../api/images/distribution-routes.js'
import { networkRoutes } from '../api/networks/routes.js'
import { volumeRoutes } from '../api/volumes/routes.js'
import { pluginRoutes } from '../api/plugins/routes.js'
import { buildRoutes } from '../api/build/routes.js'
import { swarmRoutes, nodeRoutes, serviceRoutes, taskRoutes, secretRoutes, configRoutes } from '../api/swarm/routes.js'
import type { SystemBackend } from '../api/system/backend.js'
import { ContainerOps } from './container-ops.js'
import { ImageOps } from './image-ops.js'

export interface RouteTableParts {
  system: SystemBackend
  /** The swarm, loaded at the first swarm request (engine.ts loadSwarm). */
  swarm: () => Promise<SwarmManager>
  containers: ContainerService
  list: ContainerList
  execs: ExecService
  runtime: ContainerRuntime
  network: NetworkService
  volumes: VolumeService
  containerVolumes: ContainerVolumes
  images: ImageService
  events: EventBus
  /** What the builder asks of the engine. */
  builds: BuildBackend
  /** Where each build gets its scratch directory. */
  buildDir: string
  buildContextLimit?: number
  /** The registry client (loaded on first use). */
  distribution: () => Promise<Distribution>
  /** The image collector's sweep now (null when work in flight defers it). */
  collect: () => Promise<number | null>
}

export function routeTables (p: RouteTableParts): Array<Array<Route<ApiHandler>>> {
  const imageOps = new ImageOps({
    images: p.images,
    events: p.events,
    containerCount: (id) => p.containers.containersUsingImage(id).length,
    distribution: p.distribution,
    collect: p.collect
  })
  const container = (ref: string): ContainerHandle => p.containers.get(ref)
  const holdRootfs = async (c: ContainerHandle): Promise<() => Promise<void>> => await p.containers.holdRootfs(c)
  const emit = (type: EventType, action: string, id: string, attrs: Record<string, string>): void => { p.events.emit(type, action, id, attrs) }
  // the swarm's tables, over its resources once it is loaded: each handler waits for the load first
  let swarm: SwarmManager | undefined
  const loadSwarm = async (): Promise<void> => { swarm ??= await p.swarm() }
  const ofSwarm = <T extends object>(pick: (s: SwarmManager) => T): T => forwarding(() => pick(swarm as SwarmManager))
  const swarmTables = [
    swarmRoutes(ofSwarm((s) => s.cluster)), nodeRoutes(ofSwarm((s) => s.nodes)), serviceRoutes(ofSwarm((s) => s.services)),
    taskRoutes(ofSwarm((s) => s.tasks)), secretRoutes(ofSwarm((s) => s.secrets)), configRoutes(ofSwarm((s) => s.configs))
  ]
  return [
    ...swarmTables.map((routes) => afterLoad(loadSwarm, routes)),
    systemRoutes(p.system),
    execRoutes(p.execs),
    containerRoutes(new ContainerOps({ containers: p.containers, list: p.list, events: p.events })),
    networkRoutes(p.network),
    volumeRoutes(p.volumes),
    pluginRoutes(),
    commitRoutes(new ContainerCommit({
      container,
      withRootfs: async (c, fn) => await p.containers.withRootfs(c, fn),
      pause: async (id) => { await p.containers.pause(id) },
      resume: async (id) => { await p.containers.unpause(id) },
      beingRemoved: (c) => p.containers.beingRemoved(c),
      images: p.images,
      emit,
      engineVersion: ENGINE_VERSION
    })),
    containerFileRoutes(new ContainerFiles({
      container,
      holdRootfs,
      rootfsMounted: async (c) => c.rec.rootfsKind !== 'overlay' || await p.runtime.rootfsMounted(c.rootfs),
      viewMounts: async (c) => await p.containerVolumes.viewMounts(c.rec.mounts ?? [], c.rec.run.tmpfs.map((t) => t.destination)),
      images: p.images,
      emit
    })),
    containerStatsRoutes(new ContainerStats({ container, pids: async (id) => await p.runtime.processes(id), interfaces: (id) => p.network.interfaces(id) })),
    imageArchiveRoutes(imageOps),
    imageDistributionRoutes(imageOps),
    buildRoutes(new BuildRunner({ backend: p.builds, tmpRoot: p.buildDir, contextLimit: p.buildContextLimit ?? DEFAULT_CONTEXT_LIMIT })),
    imageRoutes(imageOps)
  ]
}

/**
 * A backend for a route table built before the object that serves it exists: each method calls the same method of
 * `target()` (the swarm's resource; afterLoad's handlers make sure it is loaded before any of them runs).
 */
function forwarding<T extends object> (target: () => T): T {
  return new Proxy({} as T, {
    get: (_, name) => (...args: unknown[]): unknown => {
      const t = target()
      return (Reflect.get(t, name) as (...a: unknown[]) => unknown).apply(t, args)
    }
  })
}

/** The routes with each handler waiting for `load()` first. */
function afterLoad (load: () => Promise<void>, routes: Array<Route<ApiHandler>>): Array<Route<ApiHandler>> {
  return routes.map((r) => ({ ...r, handler: async (ctx) => { await load(); await r.handler(ctx) } }))
}
