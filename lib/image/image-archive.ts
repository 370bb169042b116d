// `docker save` and `docker load`: the archive dockerd 25+ writes (an OCI image layout plus Docker's manifest.json
// and repositories), streamed straight from the content store; and loading that layout, the legacy one
// (`<id>/layer.tar`, found by following manifest.json) or a bare OCI layout (index.json only).
//
// Load extracts the archive into a private directory first (manifest.json usually comes after the blobs), checks
// every configuration and every layer's digest against the config's diff_ids, and only then stores anything; layers
// it stored for an image that did not make it are removed again. The temporary directory lives in the content
// store's ingest area, which is wiped at boot, so a crash leaves nothing behind either.
import { createHash, randomBytes } from 'node:crypto'
import { mkdir, rm, open, type FileHandle } from 'node:fs/promises'
import { constants as fsc } from 'node:fs'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { invalidArgument, internal, isEngineError, errorMessage, describeError } from '../errors.js'
import { levelLogger } from '../log.js'
import { ScopedRoot, at } from '../util/scoped-fs.js'
import { extractTar } from '../stream/tar.js'
import { addEntry, addPathEntry, tarStreamOf, type TarPack } from '../stream/tar-tree.js'
import { chainIds } from './layer-store.js'
import type { ImageService } from './image-service.js'
import { decompressed } from '../stream/decompressed.js'
import { sha256Digest } from './content-store.js'
import { parseReference, familiarName, familiarString, fullName, withDefaultTag, type Reference } from './reference.js'
import type { ImageConfigBlob, ImageRecord } from './types.js'
import { isSha256Digest } from './digest.js'
import { MEDIA_DOCKER_LIST, MEDIA_OCI_CONFIG, MEDIA_OCI_INDEX, MEDIA_OCI_LAYER_TAR, MEDIA_OCI_MANIFEST } from './media-types.js'
import { hostArch } from './platform.js'
import { parseJson as parseBoundedJson } from '../util/json-depth.js'

const ops = levelLogger('engine:images')
const ANNOTATION_IMAGE_NAME = 'io.containerd.image.name'
const ANNOTATION_REF_NAME = 'org.opencontainers.image.ref.name'
const OCI_LAYOUT = '{"imageLayoutVersion": "1.0.0"}'

/** One image to save: the record and the tag references (familiar form) it is saved under. */
export interface SaveItem { img: ImageRecord, refs: string[] }

/**
 * Resolves `docker save` arguments as dockerd's parseNames does: `name:tag` saves that tag, a bare repository name
 * saves all its tags, an ID (or ID prefix, or digest reference) saves the image without tags.
 */
export function resolveSaveNames (svc: ImageService, names: string[]): SaveItem[] {
  const items = new Map<string, SaveItem>()
  const add = (img: ImageRecord, ref?: string): void => {
    let item = items.get(img.id)
    if (item === undefined) { item = { img, refs: [] }; items.set(img.id, item) }
    if (ref !== undefined && !item.refs.includes(ref)) item.refs.push(ref)
  }
  for (const name of names) {
    if (/^(sha256:)?[0-9a-f]{64}$/.test(name)) { add(svc.store.lookup(name).img); continue }
    const r = parseReference(name)
    if (r.tag === undefined && r.digest === undefined) {
      const repo = familiarName(r)
      let found = false
      for (const img of svc.store.all()) {
        for (const t of img.repoTags) {
          if (familiarName(parseReference(t)) === repo) { add(img, t); found = true }
        }
      }
      if (!found) add(svc.store.lookup(name).img)
      continue
    }
    const { img, via, name: matched } = svc.store.lookup(name)
    add(img, via === 'tag' ? matched : undefined)
  }
  return [...items.values()]
}

function jsonLine (value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value) + '\n')
}

function fullRef (familiar: string): { full: string, tag: string } {
  const r = withDefaultTag(parseReference(familiar))
  return { full: `${fullName(r)}:${r.tag as string}`, tag: r.tag as string }
}

type Blob = { from: 'store', digest: string, mtime: Date } | { from: 'memory', data: Buffer, mtime: Date }

/**
 * The save archive for `items`, as a stream. Everything that can fail for a missing blob is checked before the
 * stream exists, so a caller can still answer with an error status.
 */
export async function saveImages (svc: ImageService, items: SaveItem[]): Promise<Readable> {
  const epoch = new Date(0)
  const blobs = new Map<string, Blob>()
  const manifestJson: Array<Record<string, unknown>> = []
  const index: Array<Record<string, unknown>> = []
  const repositories: Record<string, Record<string, string>> = {}
  for (const { img, refs } of items) {
    const created = img.config.created !== undefined && !Number.isNaN(Date.parse(img.config.created)) ? new Date(img.config.created) : epoch
    const diffIds = img.config.rootfs.diff_ids
    if (diffIds.length === 0) throw invalidArgument(`cannot save ${img.id}: the image has no layers`)
    const configSize = await svc.content.size(img.id).catch((err) => { throw internal(`configuration of image ${img.id} is missing from the content store`, { cause: err }) })
    blobs.set(img.id.slice(7), { from: 'store', digest: img.id, mtime: created })
    const layers: Array<Record<string, unknown>> = []
    for (const d of diffIds) {
      const size = await svc.content.size(d).catch((err) => { throw internal(`layer ${d} of image ${img.id} is missing from the content store`, { cause: err }) })
      blobs.set(d.slice(7), { from: 'store', digest: d, mtime: created })
      layers.push({ mediaType: MEDIA_OCI_LAYER_TAR, digest: d, size })
    }
    const manifest = Buffer.from(JSON.stringify({
      schemaVersion: 2,
      mediaType: MEDIA_OCI_MANIFEST,
      config: { mediaType: MEDIA_OCI_CONFIG, digest: img.id, size: configSize },
      layers
    }))
    const manifestDigest = sha256Digest(manifest)
    blobs.set(manifestDigest.slice(7), { from: 'memory', data: manifest, mtime: epoch })
    const descriptor = { mediaType: MEDIA_OCI_MANIFEST, digest: manifestDigest, size: manifest.length }
    for (const ref of refs) {
      const { full, tag } = fullRef(ref)
      index.push({ ...descriptor, annotations: { [ANNOTATION_IMAGE_NAME]: full, [ANNOTATION_REF_NAME]: tag } })
      const repo = familiarName(parseReference(ref))
      repositories[repo] = { ...(repositories[repo] ?? {}), [tag]: (diffIds[diffIds.length - 1] as string).slice(7) }
    }
    if (refs.length === 0) index.push(descriptor)
    manifestJson.push({
      Config: `blobs/sha256/${img.id.slice(7)}`,
      RepoTags: refs.length > 0 ? refs : null,
      Layers: diffIds.map((d) => `blobs/sha256/${d.slice(7)}`),
      ...(img.parent !== '' && items.some((i) => i.img.id === img.parent) ? { Parent: img.parent } : {})
    })
  }
  const indexJson = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: MEDIA_OCI_INDEX, manifests: index }))
  // the order dockerd's tar of its export directory has: blobs (by digest), then the top-level files by name
  return tarStreamOf(async (pack: TarPack) => {
    const dir = { type: 'directory' as const, mode: 0o755, mtime: epoch }
    await addEntry(pack, { ...dir, name: 'blobs/' })
    await addEntry(pack, { ...dir, name: 'blobs/sha256/' })
    for (const hex of [...blobs.keys()].sort()) {
      const b = blobs.get(hex) as Blob
      const header = { name: `blobs/sha256/${hex}`, mode: 0o644, mtime: b.mtime }
      if (b.from === 'memory') await addEntry(pack, { ...header, type: 'file' }, b.data)
      else await addPathEntry(pack, header, svc.content.blobPath(b.digest))
    }
    const file = { type: 'file' as const, mode: 0o644, mtime: epoch }
    await addEntry(pack, { ...file, name: 'index.json' }, indexJson)
    await addEntry(pack, { ...file, name: 'manifest.json' }, jsonLine(manifestJson))
    await addEntry(pack, { ...file, name: 'oci-layout' }, Buffer.from(OCI_LAYOUT))
    if (Object.keys(repositories).length > 0) await addEntry(pack, { ...file, name: 'repositories' }, jsonLine(repositories))
  })
}

// ---- load ------------------------------------------------------------------------------------------------------

/** What load reports; `stream` lines go to the client as {"stream": …}, progress as JSON progress records. */
export interface LoadReporter {
  stream (line: string): void
  progress (record: Record<string, unknown>): void
}

interface ManifestItem { Config: string, RepoTags: string[] | null, Layers: string[], Parent?: string }

interface PlannedImage {
  raw: Buffer
  config: ImageConfigBlob
  layers: string[]
  refs: Reference[]
  parent: string
}

function isStringArray (v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === 'string')
}

/** Opens a file of the extracted archive; symlinks in it are followed inside the archive only. */
async function openInArchive (root: ScopedRoot, path: string): Promise<FileHandle> {
  let loc
  try {
    loc = await root.locate(path, { followLast: true })
  } catch (err) {
    throw invalidArgument(`invalid archive: ${path} not found`, { cause: err })
  }
  try {
    const fh = await open(at(loc.dir, loc.name), fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK).catch((err: unknown) => {
      throw invalidArgument(`invalid archive: ${path} not found`, { cause: err })
    })
    if (!(await fh.stat()).isFile()) { await fh.close(); throw invalidArgument(`invalid archive: ${path} is not a file`) }
    return fh
  } finally { await loc.dir.close() }
}

async function readInArchive (root: ScopedRoot, path: string, limit = 16 * 1024 * 1024): Promise<Buffer> {
  const fh = await openInArchive(root, path)
  try {
    if ((await fh.stat()).size > limit) throw invalidArgument(`invalid archive: ${path} is too large`)
    return await fh.readFile()
  } finally { await fh.close() }
}

async function existsInArchive (root: ScopedRoot, path: string): Promise<boolean> {
  try { await (await openInArchive(root, path)).close(); return true } catch { return false }
}

function parseJson (data: Buffer, what: string): unknown {
  try { return parseBoundedJson(data) } catch (err) {
    throw invalidArgument(`invalid archive: failed to decode ${what}: ${errorMessage(err)}`, { cause: err })
  }
}

/** manifest.json items for a bare OCI layout (index.json → manifests → config and layer blobs). */
async function itemsFromOciIndex (root: ScopedRoot): Promise<ManifestItem[]> {
  const blobPath = (digest: unknown): string => {
    if (typeof digest !== 'string' || !isSha256Digest(digest)) throw invalidArgument(`invalid archive: bad digest ${String(digest)}`)
    return `blobs/sha256/${digest.slice(7)}`
  }
  const items: ManifestItem[] = []
  const visit = async (desc: Record<string, unknown>, name: string | undefined, depth: number): Promise<void> => {
    if (depth > 4) throw invalidArgument('invalid archive: index nesting too deep')
    const doc = parseJson(await readInArchive(root, blobPath(desc.digest)), blobPath(desc.digest)) as Record<string, unknown>
    const mediaType = (doc.mediaType ?? desc.mediaType) as string | undefined
    if (mediaType === MEDIA_OCI_INDEX || mediaType === MEDIA_DOCKER_LIST || Array.isArray(doc.manifests)) {
      const list = (doc.manifests ?? []) as Array<Record<string, unknown>>
      const arch = hostArch()
      const pick = list.find((m) => { const p = m.platform as { os?: string, architecture?: string } | undefined; return p?.os === 'linux' && p.architecture === arch }) ?? list[0]
      if (pick !== undefined) await visit(pick, name, depth + 1)
      return
    }
    const cfg = doc.config as Record<string, unknown> | undefined
    const layers = (doc.layers ?? []) as Array<Record<string, unknown>>
    if (cfg === undefined) throw invalidArgument('invalid archive: manifest without config')
    items.push({ Config: blobPath(cfg.digest), RepoTags: name !== undefined ? [name] : null, Layers: layers.map((l) => blobPath(l.digest)) })
  }
  const index = parseJson(await readInArchive(root, 'index.json'), 'index.json') as { manifests?: Array<Record<string, unknown>> }
  for (const m of index.manifests ?? []) {
    const ann = (m.annotations ?? {}) as Record<string, string>
    let name: string | undefined
    for (const candidate of [ann[ANNOTATION_IMAGE_NAME], ann[ANNOTATION_REF_NAME]]) {
      if (candidate === undefined || name !== undefined) continue
      try {
        const r = parseReference(candidate)
        if (r.tag !== undefined) name = familiarString(r)
      } catch { /* a bare tag ("latest") names no repository */ }
    }
    await visit(m, name, 0)
  }
  return items
}

async function hashLayer (root: ScopedRoot, path: string): Promise<string> {
  const fh = await openInArchive(root, path)
  try {
    const hash = createHash('sha256')
    for await (const chunk of await decompressed(fh.createReadStream({ autoClose: false }))) hash.update(chunk as Buffer)
    return `sha256:${hash.digest('hex')}`
  } finally { await fh.close() }
}

/** Checks the whole archive before anything is stored. */
async function planLoad (svc: ImageService, root: ScopedRoot): Promise<PlannedImage[]> {
  let items: ManifestItem[]
  if (await existsInArchive(root, 'manifest.json')) {
    const parsed = parseJson(await readInArchive(root, 'manifest.json'), 'manifest.json')
    if (parsed === null) throw invalidArgument('invalid manifest, manifest cannot be null (but can be [])')
    if (!Array.isArray(parsed)) throw invalidArgument('invalid archive: manifest.json is not a list')
    items = parsed as ManifestItem[]
  } else if (await existsInArchive(root, 'index.json')) {
    items = await itemsFromOciIndex(root)
  } else {
    throw invalidArgument('invalid archive: does not contain a manifest.json')
  }
  const planned: PlannedImage[] = []
  const verified = new Set<string>()
  for (const m of items) {
    if (typeof m?.Config !== 'string' || !isStringArray(m.Layers) || (m.RepoTags !== null && m.RepoTags !== undefined && !isStringArray(m.RepoTags))) {
      throw invalidArgument('invalid archive: malformed manifest.json entry')
    }
    const raw = await readInArchive(root, m.Config)
    const config = parseJson(raw, m.Config) as ImageConfigBlob
    if (config === null || typeof config !== 'object' || config.rootfs === undefined || !isStringArray(config.rootfs.diff_ids)) {
      throw invalidArgument(`invalid archive: ${m.Config} is not an image configuration`)
    }
    if ((config.os ?? 'linux') !== 'linux') throw invalidArgument(`cannot load ${config.os} image on linux`)
    const diffIds = config.rootfs.diff_ids
    if (diffIds.length !== m.Layers.length) throw invalidArgument(`invalid manifest, layers length mismatch: expected ${m.Layers.length}, got ${diffIds.length}`)
    const chains = chainIds(diffIds)
    for (let i = 0; i < diffIds.length; i++) {
      const expected = diffIds[i] as string
      if (!isSha256Digest(expected)) throw invalidArgument(`invalid diffID for layer ${i}: ${expected}`)
      if (verified.has(expected) || await svc.layers.has(chains[i] as string)) continue
      const actual = await hashLayer(root, m.Layers[i] as string)
      if (actual !== expected) throw invalidArgument(`invalid diffID for layer ${i}: expected "${expected}", got "${actual}"`)
      verified.add(expected)
    }
    const refs: Reference[] = []
    for (const t of m.RepoTags ?? []) {
      const r = parseReference(t)
      if (r.tag === undefined || r.digest !== undefined) throw invalidArgument(`invalid tag "${t}"`)
      refs.push(r)
    }
    planned.push({ raw, config, layers: m.Layers, refs, parent: typeof m.Parent === 'string' ? m.Parent : '' })
  }
  return planned
}

/** Registers an image under the exact bytes of its configuration, so its ID stays what it was where it was saved. */
async function addImageRaw (svc: ImageService, raw: Buffer, config: ImageConfigBlob, parent: string): Promise<ImageRecord> {
  if (JSON.stringify(config) === raw.toString('utf8')) return await svc.addImage(config, parent)
  const id = await svc.content.put(raw)
  return await svc.store.add(id, config, parent, await svc.layerSizesOf(config))
}

/**
 * POST /images/load: reads a save archive (plain or gzip) and stores its images and tags. Reports
 * `Loaded image: <ref>` per tag, `Loaded image ID: <id>` for an image without tags.
 */
export async function loadImages (svc: ImageService, src: Readable, report: LoadReporter, quiet: boolean): Promise<ImageRecord[]> {
  const tmp = join(svc.content.ingestDir, `load-${randomBytes(8).toString('hex')}`)
  await mkdir(tmp, { recursive: true, mode: 0o700 })
  const created: Array<{ chain: string, diffId: string }> = []
  const loaded: ImageRecord[] = []
  try {
    try {
      await extractTar(await decompressed(src), tmp, { strictLinks: true, chown: false })
    } catch (err) {
      if (isEngineError(err)) throw err
      throw invalidArgument(`invalid archive: ${errorMessage(err)}`, { cause: err })
    }
    const root = await ScopedRoot.open(tmp)
    try {
      // inside the collector's gate: layers found stored stay until the images that use them are registered
      await svc.gate.within(async () => {
        const plan = await planLoad(svc, root)
        try {
          for (const p of plan) {
            const chains = chainIds(p.config.rootfs.diff_ids)
            for (let i = 0; i < chains.length; i++) {
              const chain = chains[i] as string
              if (await svc.layers.has(chain)) continue
              const fh = await openInArchive(root, p.layers[i] as string)
              let added
              try {
                added = await svc.addLayer(await decompressed(fh.createReadStream({ autoClose: false })), i === 0 ? null : chains[i - 1] as string)
              } finally { await fh.close() }
              created.push({ chain, diffId: added.diffId })
              if (added.chainId !== chain) throw invalidArgument(`invalid diffID for layer ${i}: expected "${p.config.rootfs.diff_ids[i] as string}", got "${added.diffId}"`)
              if (!quiet) report.progress({ status: 'Loading layer', progressDetail: { current: added.size, total: added.size }, id: added.diffId.slice(7, 19) })
            }
            const parent = p.parent !== '' && svc.store.byId(p.parent) !== undefined ? p.parent : ''
            const img = await addImageRaw(svc, p.raw, p.config, parent)
            loaded.push(img)
            for (const r of p.refs) {
              const name = familiarString(r)
              const prev = svc.store.all().find((o) => o.repoTags.includes(name))
              if (prev !== undefined && prev.id !== img.id) report.stream(`The image ${name} already exists, renaming the old one with ID ${prev.id} to empty string\n`)
              await svc.tagRef(img, name)
              report.stream(`Loaded image: ${name}\n`)
            }
            if (p.refs.length === 0) report.stream(`Loaded image ID: ${img.id}\n`)
          }
        } catch (err) {
          await releaseUnused(svc, created)
          throw err
        }
      })
    } finally { await root.close() }
  } finally {
    await rm(tmp, { recursive: true, force: true })
  }
  return loaded
}

/** Removes the layers (and their blobs) this load stored that no image uses, after a failure part way. */
async function releaseUnused (svc: ImageService, created: Array<{ chain: string, diffId: string }>): Promise<void> {
  const chainsInUse = new Set<string>()
  const blobsInUse = new Set<string>()
  for (const img of svc.store.all()) {
    for (const c of chainIds(img.config.rootfs.diff_ids)) chainsInUse.add(c)
    for (const d of img.config.rootfs.diff_ids) blobsInUse.add(d)
  }
  for (const { chain, diffId } of created) {
    // what cannot go now is unused: the collector's next sweep tries again
    if (!chainsInUse.has(chain)) await svc.layers.remove(chain).catch((err) => { ops.warn('a failed load leaves layer %s: %s', chain, describeError(err)) })
    if (!blobsInUse.has(diffId)) await svc.content.delete(diffId).catch((err) => { ops.warn('a failed load leaves blob %s: %s', diffId, describeError(err)) })
  }
}
