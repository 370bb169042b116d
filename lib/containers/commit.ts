// POST /commit: a container's filesystem changes become one new layer on top of its image (whiteouts for
// deletions, from the same upper-directory walk as `docker diff`), its config the new image's config.
import type { Readable } from 'node:stream'
import type { EventType } from '../events/event-bus.js'
import type { ImageConfigBlob, ImageProvider, ImageRecord, ImageRunConfig } from '../image/types.js'
import type { ContainerHandle } from './container-handle.js'
import { layerTar } from '../image/diff.js'
import { runtimeMountPoints } from './container-files.js'
import { chainIds } from '../image/layer-store.js'
import { applyChanges } from '../image/changes.js'
import { canonicalKeys, strSlice } from './create-config.js'
import { HEALTH_FIELDS } from './container-config.js'
import { eventAttributes } from './container.js'
import type { ContainerConfig } from './container.js'
import { parseReference, familiarString, withDefaultTag } from '../image/reference.js'
import { notImplemented, invalidArgument, conflict, describeError, type EngineError } from '../errors.js'
import { hostArch } from '../image/platform.js'
import { levelLogger } from '../log.js'
import { isoTime } from '../util/time.js'

const ops = levelLogger('engine:containers')

export interface CommitOptions {
  container: string
  repo: string
  tag: string
  comment: string
  author: string
  pause: boolean
  changes: string[]
  /** The optional config body: overrides the container's config. */
  config: Record<string, unknown> | undefined
}

/** What a commit needs: the container, its pause, the image store and the event bus, as methods. */
export interface CommitDeps {
  /** A container by full ID, name or unique ID prefix; throws not-found. */
  container (ref: string): ContainerHandle
  /** Runs `fn` with the container's root filesystem mounted (a stopped container's is unmounted again after). */
  withRootfs<T> (c: ContainerHandle, fn: () => Promise<T>): Promise<T>
  /** The container's own pause and unpause (its state and events follow, as `docker pause` and `unpause`). */
  pause (id: string): Promise<void>
  resume (id: string): Promise<void>
  /** Whether a removal of the container is asked for, under way or done. */
  beingRemoved (c: ContainerHandle): boolean
  images: ImageProvider & {
    addLayer (tar: Readable, parentChain: string | null, opts: { unpack?: boolean, contentSize?: () => number }): Promise<{ diffId: string }>
    addImage (config: ImageConfigBlob, parent: string, ref?: string): Promise<ImageRecord>
    /** The collector's gate: the commit's layers stay until its image is registered. */
    gate: { within: <T>(work: () => Promise<T>) => Promise<T> }
  }
  /** The engine version the image config records (docker_version). */
  engineVersion: string
  emit (type: EventType, action: string, actorId: string, attributes: Record<string, string>): void
}

const emptyObjects = (keys: string[]): Record<string, object> => Object.fromEntries(keys.map((k) => [k, {}]))

/** The container's Config as an image's run config (the fields an image keeps): what commit writes. */
function imageRunConfigOf (c: ContainerConfig): ImageRunConfig {
  const out: ImageRunConfig = {
    User: c.user,
    Env: c.env,
    Cmd: c.cmd,
    Entrypoint: c.entrypoint,
    Volumes: c.volumes === null ? null : emptyObjects(c.volumes),
    WorkingDir: c.workingDir,
    Labels: c.labels,
    OnBuild: c.onBuild
  }
  if (c.exposedPorts !== undefined) out.ExposedPorts = emptyObjects(c.exposedPorts)
  if (c.stopSignal !== undefined) out.StopSignal = c.stopSignal
  if (c.shell !== undefined) out.Shell = c.shell
  if (c.healthcheck !== undefined) {
    const h = c.healthcheck as Record<string, unknown>
    const hc: Record<string, unknown> = {}
    for (const [key, field] of HEALTH_FIELDS) if (h[field] !== undefined) hc[key] = h[field]
    out.Healthcheck = hc as ImageRunConfig['Healthcheck']
  }
  return out
}

const RUN_KEYS = ['User', 'ExposedPorts', 'Env', 'Cmd', 'Entrypoint', 'Volumes', 'WorkingDir', 'Labels', 'StopSignal', 'OnBuild', 'Shell', 'Healthcheck', 'ArgsEscaped'] as const

/** Fields set in the body win; unset ("zero") fields keep the container's values (dockerd's merge). */
function overrideWith (base: ImageRunConfig, body: Record<string, unknown>): ImageRunConfig {
  const b = canonicalKeys(body, RUN_KEYS)
  const out: ImageRunConfig = { ...base }
  if (typeof b.User === 'string' && b.User !== '') out.User = b.User
  if (typeof b.WorkingDir === 'string' && b.WorkingDir !== '') out.WorkingDir = b.WorkingDir
  if (typeof b.StopSignal === 'string' && b.StopSignal !== '') out.StopSignal = b.StopSignal
  const cmd = strSlice(b.Cmd, 'Cmd')
  if (cmd !== null && cmd.length > 0) out.Cmd = cmd
  const ep = strSlice(b.Entrypoint, 'Entrypoint')
  if (ep !== null && ep.length > 0) out.Entrypoint = ep
  if (Array.isArray(b.Env) && b.Env.length > 0) {
    const env = [...(out.Env ?? [])]
    for (const kv of (b.Env as unknown[]).map(String)) {
      const k = kv.split('=')[0]
      const i = env.findIndex((e) => e.split('=')[0] === k)
      if (i === -1) env.push(kv); else env[i] = kv
    }
    out.Env = env
  }
  if (b.Labels !== null && typeof b.Labels === 'object') out.Labels = { ...(out.Labels ?? {}), ...(b.Labels as Record<string, string>) }
  if (b.ExposedPorts !== null && typeof b.ExposedPorts === 'object') out.ExposedPorts = { ...(out.ExposedPorts ?? {}), ...(b.ExposedPorts as Record<string, object>) }
  if (b.Volumes !== null && typeof b.Volumes === 'object') out.Volumes = { ...(out.Volumes ?? {}), ...(b.Volumes as Record<string, object>) }
  if (b.Healthcheck !== null && typeof b.Healthcheck === 'object' && !Array.isArray(b.Healthcheck)) out.Healthcheck = b.Healthcheck as ImageRunConfig['Healthcheck']
  const shell = strSlice(b.Shell, 'Shell')
  if (shell !== null && shell.length > 0) out.Shell = shell
  return out
}

function refOf (repo: string, tag: string): string | undefined {
  if (repo === '') {
    if (tag !== '') throw invalidArgument('tag requires a repository')
    return undefined
  }
  const r = parseReference(repo)
  if (r.digest !== undefined) throw invalidArgument('refusing to create a tag with a digest reference')
  if (tag !== '' && r.tag !== undefined) throw invalidArgument('invalid reference format')
  return familiarString(withDefaultTag({ ...r, ...(tag !== '' ? { tag } : {}) }))
}

export async function commitContainer (d: CommitDeps, o: CommitOptions): Promise<ImageRecord> {
  const c = d.container(o.container)
  const ref = refOf(o.repo, o.tag)
  const beingRemoved = (): EngineError => conflict(`You cannot commit container ${c.id} which is being removed`)
  if (d.beingRemoved(c)) throw beingRemoved()
  if (c.rec.rootfsKind !== 'overlay') throw notImplemented('commit needs an overlayfs root filesystem; this container has a copied tree')
  const base = await d.images.resolveImage(c.rec.imageId)
  let config = overrideWith(imageRunConfigOf(c.rec.config), o.config ?? {})
  config = applyChanges(config, o.changes)
  // the diff reads the merged view to recognise opaque directories
  const diffId = await d.withRootfs(c, async () => {
    // dockerd's: through the container's own pause, whose failure does not stop the commit (a container that exited,
    // was paused or is being removed meanwhile is committed as it is); its state says paused meanwhile, so a client's
    // unpause or pause at the same time is one of a paused container, not a runtime error
    const paused = o.pause && c.rec.state.status === 'running' ? await d.pause(c.id).then(() => true, () => false) : false
    try {
      const lowers = await d.images.layerPaths(base)
      const size = { content: 0 }
      const tar = layerTar({ upper: c.rootfs.upper, lowers, merged: c.rootfs.merged, mountPoints: runtimeMountPoints(c) }, size)
      const parentChain = chainIds(base.config.rootfs.diff_ids).pop() ?? null
      // the layer is stored now and unpacked when a container first needs it: commit writes it once, not twice
      return (await d.images.addLayer(tar, parentChain, { unpack: false, contentSize: () => size.content })).diffId
    } finally {
      // the commit itself is done; an unpause that fails (a client unpaused it, it exited or is being removed) leaves
      // the container as its state says
      if (paused) await d.resume(c.id).catch((err) => { if (!d.beingRemoved(c) && c.rec.state.status === 'paused') ops.warn('container %s stays paused: unpausing it after a commit failed: %s', c.id.slice(0, 12), describeError(err)) })
    }
  }).catch((err) => {
    // a removal at the same time took the trees away under the diff, or its kill made the freeze fail ("unexpected
    // state THAWED while freezing"): dockerd refuses a container being removed
    throw d.beingRemoved(c) ? beingRemoved() : err
  })
  const now = isoTime()
  const blob: ImageConfigBlob = {
    architecture: base.config.architecture ?? hostArch(),
    os: base.config.os ?? 'linux',
    ...(base.config.variant !== undefined ? { variant: base.config.variant } : {}),
    created: now,
    ...(o.author !== '' ? { author: o.author } : {}),
    ...(o.comment !== '' ? { comment: o.comment } : {}),
    docker_version: d.engineVersion,
    config,
    rootfs: { type: 'layers', diff_ids: [...base.config.rootfs.diff_ids, diffId] },
    history: [...(base.config.history ?? []), {
      created: now,
      created_by: [c.rec.path, ...c.rec.args].join(' '),
      ...(o.author !== '' ? { author: o.author } : {}),
      ...(o.comment !== '' ? { comment: o.comment } : {})
    }]
  }
  const img = await d.images.addImage(blob, base.id, ref)
  d.emit('container', 'commit', c.id, eventAttributes(c.rec, { comment: o.comment, imageID: img.id, imageRef: ref ?? '' }))
  return img
}

/** Commits over the given dependencies (what the commit route's CommitBackend asks for). */
export class ContainerCommit {
  private readonly d: CommitDeps
  constructor (d: CommitDeps) { this.d = d }
  // inside the collector's gate: the base's layers and the new one stay until the image is registered
  async commit (o: CommitOptions): Promise<ImageRecord> { return await this.d.images.gate.within(async () => await commitContainer(this.d, o)) }
}
