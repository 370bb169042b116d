// The engine side of lib/build's BuildBackend: images from the image service, RUN containers through the public
// methods of ContainerService, pulls through the distribution service, commits as in POST /commit.
import type { Readable } from 'node:stream'
import type { ServerResponse } from 'node:http'
import { decodeCreateRequest } from '../containers/create-request.js'
import type { BuildBackend, BuildImage, BuildProgress, RunSpec } from '../build/backend.js'
import type { ImageService } from '../image/image-service.js'
import type { ImageConfigBlob, ImageRecord } from '../image/types.js'
import type { ContainerService } from '../containers/container-service.js'
import type { Distribution } from '../distribution/distribution.js'
import { ProgressStream } from '../distribution/progress.js'
import { streamLog } from '../containers/log-reader.js'
import { demuxSink } from '../stream/stdcopy.js'
import { layerTar } from '../image/diff.js'
import { runtimeMountPoints } from '../containers/container-files.js'
import { chainIds } from '../image/layer-store.js'
import { parseReference } from '../image/reference.js'
import { mkdir } from 'node:fs/promises'
import { rootfsPaths, mountRootfs, copyLayers, unmountRootfs } from '../runtime/rootfs.js'
import { parseAuthConfig, type AuthConfig } from '../distribution/auth-config.js'
import { describeError, isEngineError } from '../errors.js'
import { levelLogger } from '../log.js'

const ops = levelLogger('engine:build')

/** A response that is already gone: a quiet build's pull progress goes nowhere. */
const DISCARD = { destroyed: true, writableEnded: true } as unknown as ServerResponse

export interface BuildBackendDeps {
  images: ImageService
  containers: () => ContainerService
  distribution: () => Promise<Distribution>
}

/** The registry's entry in X-Registry-Config (keys are hosts or the index URL for Docker Hub). */
function authFor (registryConfig: Record<string, unknown>, ref: string): AuthConfig {
  let domain: string
  try { domain = parseReference(ref).domain } catch { return {} }
  const keys = domain === 'docker.io' ? ['https://index.docker.io/v1/', 'index.docker.io', 'docker.io', 'registry-1.docker.io'] : [domain, `https://${domain}`, `http://${domain}`]
  for (const k of keys) {
    const v = registryConfig[k]
    if (v !== null && typeof v === 'object') return parseAuthConfig(v)
  }
  return {}
}

export class EngineBuildBackend implements BuildBackend {
  private readonly d: BuildBackendDeps

  constructor (d: BuildBackendDeps) { this.d = d }

  private get containers (): ContainerService { return this.d.containers() }

  findImage (ref: string): BuildImage | undefined {
    try { return this.d.images.store.lookup(ref).img } catch { return undefined }
  }

  imageById (id: string): BuildImage | undefined { return this.d.images.store.byId(id) }

  allImages (): BuildImage[] { return this.d.images.store.all() }

  async pullImage (ref: string, platform: string, registryConfig: Record<string, unknown>, progress: BuildProgress, signal: AbortSignal): Promise<BuildImage> {
    const [dist, { pullImage }] = await Promise.all([this.d.distribution(), import('../distribution/puller.js')])
    // the route's progress sink is a ProgressStream: pull records go into the build's stream as dockerd's do
    const out = progress instanceof ProgressStream ? progress : new ProgressStream(DISCARD)
    await dist.track(pullImage(dist, { fromImage: ref, tag: '', platform, auth: authFor(registryConfig, ref), signal }, out))
    return this.d.images.store.lookup(ref).img
  }

  async layerDirs (imageId: string): Promise<string[]> {
    return await this.d.images.layerPaths(await this.d.images.resolveImage(imageId))
  }

  async mountImage (imageId: string, dir: string): Promise<{ root: string, release: () => Promise<void> }> {
    const layers = await this.layerDirs(imageId)
    const nothing = async (): Promise<void> => {}
    if (layers.length === 0) { await mkdir(dir, { recursive: true }); return { root: dir, release: nothing } }
    // a base layer holds no whiteouts: it is the image's tree
    if (layers.length === 1) return { root: layers[0] as string, release: nothing }
    const paths = rootfsPaths(dir)
    if (await mountRootfs(paths, layers, 'overlay') === 'copy') {
      await copyLayers(paths, layers)
      return { root: paths.merged, release: nothing }
    }
    return { root: paths.merged, release: async () => { await unmountRootfs(paths) } }
  }

  async createContainer (spec: RunSpec): Promise<{ id: string, warnings: string[] }> {
    return await this.containers.create(decodeCreateRequest({ ...spec.config, Image: spec.imageId, HostConfig: spec.hostConfig }), null)
  }

  async runContainer (id: string, onOutput: (stream: 'stdout' | 'stderr', chunk: Buffer) => void, signal: AbortSignal): Promise<number> {
    const cs = this.containers
    const c = cs.get(id)
    const seq = c.exitSeq
    const sink = demuxSink((type, payload) => { onOutput(type === 2 ? 'stderr' : 'stdout', payload) })
    const onAbort = (): void => {
      // one that is not running any more needs no kill; the builder removes the container (forced) either way
      cs.kill(id, 'KILL').catch((err) => { if (!isEngineError(err) || err.kind !== 'conflict') ops.warn('a cancelled build could not kill its RUN container %s: %s', id.slice(0, 12), describeError(err)) })
    }
    signal.addEventListener('abort', onAbort)
    // ends the log follower when the start itself fails (no exit will come)
    const startFailed = new AbortController()
    const wake = AbortSignal.any([signal, startFailed.signal])
    try {
      const following = streamLog(sink, {
        path: c.logPath,
        unit: 'pieces',
        startOffset: 0,
        stdout: true,
        stderr: true,
        tty: false,
        timestamps: false,
        follow: true,
        done: () => startFailed.signal.aborted || c.exitSeq !== seq || c.removed,
        waitMore: c.followWaiter(wake),
        signal
      })
      try {
        signal.throwIfAborted()
        await cs.start(id)
        // a client gone while the start ran: the listener above missed it
        if (signal.aborted) onAbort()
      } catch (err) {
        startFailed.abort()
        await following.catch(() => {}) // the start's failure is the one reported; the log follower only ends
        throw err
      }
      await following
      const r = await cs.waitFor(c, 'not-running', signal)
      return r.exitCode
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
  }

  async removeContainer (id: string): Promise<void> {
    await this.containers.remove(id, true, true)
  }

  async commitContainer (id: string, parentId: string, config: ImageConfigBlob): Promise<BuildImage> {
    const cs = this.containers
    const c = cs.get(id)
    // a step's container kept by rm=0 stays as other stopped containers: unmounted after the commit
    return await cs.withRootfs(c, async () => {
      const base = parentId === '' ? undefined : await this.d.images.resolveImage(parentId)
      const lowers = base === undefined ? [] : await this.d.images.layerPaths(base)
      const tar = layerTar({ upper: c.rootfs.upper, lowers, merged: c.rootfs.merged, mountPoints: runtimeMountPoints(c) })
      return await this.addImage(parentId, base, tar, config)
    })
  }

  async createImage (parentId: string, tar: Readable | null, config: ImageConfigBlob, fill?: (diffDir: string) => Promise<void>): Promise<BuildImage> {
    const base = parentId === '' ? undefined : await this.d.images.resolveImage(parentId)
    return await this.addImage(parentId, base, tar, config, fill)
  }

  private async addImage (parentId: string, base: ImageRecord | undefined, tar: Readable | null, config: ImageConfigBlob, fill?: (diffDir: string) => Promise<void>): Promise<BuildImage> {
    // inside the collector's gate: the parent's layers and the new one stay until the image is registered
    return await this.d.images.gate.within(async () => await this.addImageWithin(parentId, base, tar, config, fill))
  }

  private async addImageWithin (parentId: string, base: ImageRecord | undefined, tar: Readable | null, config: ImageConfigBlob, fill?: (diffDir: string) => Promise<void>): Promise<BuildImage> {
    if (tar !== null) {
      const parentChain = chainIds(base?.config.rootfs.diff_ids ?? []).pop() ?? null
      const { diffId } = await this.d.images.addLayer(tar, parentChain, fill !== undefined ? { fill } : { unpack: true })
      config.rootfs.diff_ids = [...(base?.config.rootfs.diff_ids ?? []), diffId]
    }
    return await this.d.images.addImage(config, parentId)
  }

  async tagImage (id: string, ref: string): Promise<void> {
    await this.d.images.tagRef(await this.d.images.resolveImage(id), ref)
  }

  async removeImage (id: string): Promise<void> {
    await this.d.images.remove(id, false, true)
  }

  imageInUse (id: string): boolean {
    return this.containers.containersUsingImage(id).length > 0
  }
}
