// What the system routes ask the engine (lib/api/system/backend.ts): versions, /info's facts, /system/df, events.
import { readFile } from 'node:fs/promises'
import os from 'node:os'
import { createRequire } from 'node:module'
import type { EventBus, EventFilters, EventSubscription } from '../events/event-bus.js'
import type { ImageService } from '../image/image-service.js'
import { chainIds } from '../image/layer-store.js'
import { sharedSizes } from '../image/shared-size.js'
import type { SwarmManager } from '../swarm/manager.js'
import { buildCacheRecords } from '../build/build-cache.js'
import type { BuildBackend } from '../build/backend.js'
import { ZERO_TIME } from '../util/time.js'
import type { SystemBackend, SystemInfo, VersionInfo } from '../api/system/backend.js'
import { toBuildCacheItem } from '../api/build/wire.js'
import type { ContainerList } from '../containers/container-list.js'
import type { ContainerService } from '../containers/container-service.js'
import { toContainerSummary } from '../api/containers/wire.js'
import { toImageSummary } from '../api/images/wire.js'
import { logger } from '../log.js'
import type { VolumeUsageBackend } from '../api/volumes/backend.js'
import { VolumeUsageCache } from '../api/volumes/reply-cache.js'
import type { RuntimeBinary } from '../runtime/runtimes.js'
import { RuntimeFeatures } from '../runtime/runtime-features.js'

/** Enabled when the daemon logs at debug level (info's Debug). */
const debugLog = logger('engine')

export interface EngineSystemOptions {
  dataRoot: string
  /** The runtimes containers may name and the default (its version is the one checked at start). */
  runtimes: { readonly defaultName: string, list: () => RuntimeBinary[] }
  runtimeVersion: string
  /** Containers' default log driver (the daemon's log-driver). */
  loggingDriver?: string
  containers: ContainerService
  list: ContainerList
  images: ImageService
  /** Why the Linux plumbing is unavailable and containers get loopback only ('' when it is available). */
  network: { readonly unavailable: string }
  swarm: () => SwarmManager | undefined
  builds: BuildBackend
  /** The volumes' sizes and users for /system/df. */
  volumes: VolumeUsageBackend
  events: EventBus
}

function berthVersion (): string {
  try { return (createRequire(import.meta.url)('../../../package.json') as { version: string }).version } catch { return '0.0.0' }
}

export class EngineSystem implements SystemBackend {
  private readonly o: EngineSystemOptions
  private readonly volumeUsage = new VolumeUsageCache()
  /** Each runtime's `features` document, asked at the first /info (a spawn per runtime binary, kept). */
  private readonly runtimeFeatures = new RuntimeFeatures()

  constructor (o: EngineSystemOptions) {
    this.o = o
  }


  versionInfo (): VersionInfo {
    return {
      berthVersion: berthVersion(),
      gitCommit: 'berth',
      nodeVersion: process.version,
      kernelVersion: os.release(),
      arch: process.arch === 'x64' ? 'amd64' : process.arch,
      buildTime: ZERO_TIME,
      runtimeName: this.o.runtimes.defaultName,
      runtimeVersion: this.o.runtimeVersion
    }
  }

  async systemInfo (): Promise<SystemInfo> {
    const all = this.o.containers.all()
    const osRelease = await readFile('/etc/os-release', 'utf8').catch(() => '')
    const cgroup2 = await readFile('/sys/fs/cgroup/cgroup.controllers', 'utf8').then(() => true, () => false)
    const runtimes = this.o.runtimes.list()
    const features = await this.runtimeFeatures.of(runtimes)
    return {
      id: 'BERTH:' + this.o.dataRoot,
      containers: {
        total: all.length,
        running: all.filter((c) => c.rec.state.status === 'running').length,
        paused: all.filter((c) => c.rec.state.status === 'paused').length
      },
      images: this.o.images.store.all().length,
      ipv4Forwarding: (await readFile('/proc/sys/net/ipv4/ip_forward', 'utf8').catch(() => '0')).trim() === '1',
      // as dockerd's: whether the daemon logs at debug level now (berth:* enabled)
      debug: debugLog.enabled,
      loggingDriver: this.o.loggingDriver ?? 'json-file',
      cgroupVersion: cgroup2 ? '2' : '1',
      kernelVersion: os.release(),
      operatingSystem: /PRETTY_NAME="?([^"\n]+)"?/.exec(osRelease)?.[1] ?? 'Linux',
      osVersion: /VERSION_ID="?([^"\n]+)"?/.exec(osRelease)?.[1] ?? '',
      architecture: os.machine(),
      cpus: os.cpus().length,
      memTotal: os.totalmem(),
      dataRoot: this.o.dataRoot,
      hostname: os.hostname(),
      runtime: { name: this.o.runtimes.defaultName, version: this.o.runtimeVersion },
      runtimes: runtimes.map((r) => ({ ...r, ...(features.has(r.name) ? { features: features.get(r.name) } : {}) })),
      swarm: this.o.swarm()?.infoSection() ?? { NodeID: '', NodeAddr: '', LocalNodeState: 'inactive', ControlAvailable: false, Error: '', RemoteManagers: null },
      warnings: this.o.network.unavailable === '' ? [] : [`WARNING: containers get loopback only: ${this.o.network.unavailable}`]
    }
  }

  /** GET /system/df as JSON text (the volumes' part is joined from cached text). */
  async diskUsage (version: string, types: string[]): Promise<string> {
    const want = (t: string): boolean => types.length === 0 || types.includes(t)
    const out: Record<string, unknown> = {}
    if (want('image')) {
      // each layer once in LayersSize; an image's SharedSize is what it has in common with other images
      const sizes = new Map<string, number>()
      for (const img of this.o.images.store.all()) {
        const chains = chainIds(img.config.rootfs.diff_ids)
        for (let i = 0; i < chains.length; i++) {
          const c = chains[i] as string
          if (!sizes.has(c)) sizes.set(c, await this.o.images.layerSize(c, img.config.rootfs.diff_ids[i] as string))
        }
      }
      let layers = 0
      for (const n of sizes.values()) layers += n
      out.LayersSize = layers
      const all = this.o.images.store.all()
      const shared = sharedSizes(all, (c) => sizes.get(c) ?? 0)
      out.Images = all.map((img) => ({ ...toImageSummary(img, version, -1), SharedSize: shared.get(img.id) ?? 0, Containers: this.o.containers.containersUsingImage(img.id).length }))
    }
    if (want('container')) {
      const list: Array<Record<string, unknown>> = []
      for (const c of this.o.containers.all()) list.push(toContainerSummary(c, { size: true, sizes: await this.o.list.containerSizes(c) }))
      out.Containers = list
    }
    const volumes = want('volume') ? await this.volumeUsage.usageJson(this.o.volumes) : undefined
    if (want('build-cache')) out.BuildCache = buildCacheRecords(this.o.builds).map(toBuildCacheItem)
    const fields = Object.entries(out).map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`)
    if (volumes !== undefined) fields.splice(out.BuildCache === undefined ? fields.length : fields.length - 1, 0, `"Volumes":${volumes}`)
    return `{${fields.join(',')}}`
  }

  subscribeEvents (filters: EventFilters, sinceNs: bigint | undefined): EventSubscription {
    return this.o.events.subscribe(filters, sinceNs)
  }
}
