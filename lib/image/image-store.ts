// Image records and tags. Configs live in the content store (image ID = config digest); per-image metadata and the
// tag table are small JSON files written atomically:
//
//   <root>/meta/<hex>.json        {"parent","lastTagTime","repoDigests","size","layerSizes"}
//   <root>/repositories.json      {"busybox:latest":"sha256:…", …}   (familiar references)
import { mkdir, readFile, readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { describeError, notFound } from '../errors.js'
import { levelLogger } from '../log.js'
import { writeJsonAtomic } from '../util/atomic.js'
import { resolvePrefix } from '../util/ids.js'
import type { ContentStore } from './content-store.js'
import type { ImageConfigBlob, ImageRecord } from './types.js'
import { parseReference, withDefaultTag, familiarString, familiarName } from './reference.js'
import { PRIVATE_DIR } from '../util/private-modes.js'
import { isoTime } from '../util/time.js'

const ops = levelLogger('engine:images')

interface ImageMeta { parent: string, lastTagTime?: string, repoDigests: string[], size: number, layerSizes?: number[] }

export class ImageStore {
  private readonly images = new Map<string, ImageRecord>()
  private tags = new Map<string, string>()
  private readonly metaDir: string
  readonly root: string
  private readonly content: ContentStore

  constructor (root: string, content: ContentStore) {
    this.root = root
    this.content = content
    this.metaDir = join(root, 'meta')
  }

  async init (): Promise<void> {
    await mkdir(this.metaDir, { recursive: true, mode: PRIVATE_DIR })
    try {
      const t = JSON.parse(await readFile(join(this.root, 'repositories.json'), 'utf8')) as Record<string, string>
      this.tags = new Map(Object.entries(t))
    } catch (err) {
      this.tags = new Map()
      // none yet is a new store; one that cannot be read loses every tag, which the operator must hear of
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') ops.warn('the tags (repositories.json) are unreadable: images start untagged: %s', describeError(err))
    }
    for (const f of await readdir(this.metaDir)) {
      if (!/^[0-9a-f]{64}\.json$/.test(f)) continue
      const id = `sha256:${f.slice(0, 64)}`
      try {
        const meta = JSON.parse(await readFile(join(this.metaDir, f), 'utf8')) as ImageMeta
        const config = JSON.parse((await this.content.read(id)).toString('utf8')) as ImageConfigBlob
        this.images.set(id, { id, config, parent: meta.parent, repoDigests: meta.repoDigests ?? [], repoTags: [], size: meta.size ?? 0, ...(Array.isArray(meta.layerSizes) ? { layerSizes: meta.layerSizes } : {}), ...(meta.lastTagTime !== undefined ? { lastTagTime: meta.lastTagTime } : {}) })
      } catch (err) {
        // a record without its config blob is unusable; left for prune
        ops.warn('image %s is unreadable and was skipped: %s', id, describeError(err))
      }
    }
    for (const [ref, id] of [...this.tags]) {
      const img = this.images.get(id)
      if (img === undefined) this.tags.delete(ref)
      else img.repoTags.push(ref)
    }
  }

  all (): ImageRecord[] { return [...this.images.values()] }
  byId (id: string): ImageRecord | undefined { return this.images.get(id) }

  private async saveMeta (img: ImageRecord): Promise<void> {
    const meta: ImageMeta = { parent: img.parent, repoDigests: img.repoDigests, size: img.size, ...(img.layerSizes !== undefined ? { layerSizes: img.layerSizes } : {}) }
    if (img.lastTagTime !== undefined) meta.lastTagTime = img.lastTagTime
    await writeJsonAtomic(join(this.metaDir, `${img.id.slice(7)}.json`), meta)
  }

  private async saveTags (): Promise<void> {
    await writeJsonAtomic(join(this.root, 'repositories.json'), Object.fromEntries(this.tags))
  }

  /** Registers an image whose config blob is already stored, with its layers' sizes (lowest first). */
  async add (id: string, config: ImageConfigBlob, parent: string, layerSizes: number[]): Promise<ImageRecord> {
    const existing = this.images.get(id)
    if (existing !== undefined) return existing
    const img: ImageRecord = { id, config, parent, repoTags: [], repoDigests: [], size: layerSizes.reduce((a, b) => a + b, 0), layerSizes }
    await this.saveMeta(img)
    this.images.set(id, img)
    return img
  }

  /** Replaces the layer sizes of a record loaded without them. */
  async setLayerSizes (img: ImageRecord, layerSizes: number[]): Promise<void> {
    img.layerSizes = layerSizes
    img.size = layerSizes.reduce((a, b) => a + b, 0)
    await this.saveMeta(img)
  }

  /** Points a familiar tag reference at an image; returns the image it pointed at before, if any. */
  async tag (img: ImageRecord, ref: string): Promise<string | undefined> {
    const prev = this.tags.get(ref)
    if (prev === img.id) return undefined
    if (prev !== undefined) {
      const old = this.images.get(prev)
      if (old !== undefined) old.repoTags = old.repoTags.filter((t) => t !== ref)
    }
    this.tags.set(ref, img.id)
    img.repoTags.push(ref)
    img.lastTagTime = isoTime()
    await this.saveTags()
    await this.saveMeta(img)
    return prev
  }

  async untag (ref: string): Promise<void> {
    const id = this.tags.get(ref)
    if (id === undefined) return
    this.tags.delete(ref)
    const img = this.images.get(id)
    if (img !== undefined) img.repoTags = img.repoTags.filter((t) => t !== ref)
    await this.saveTags()
  }

  async addDigest (img: ImageRecord, ref: string): Promise<void> {
    if (img.repoDigests.includes(ref)) return
    img.repoDigests.push(ref)
    await this.saveMeta(img)
  }

  async removeDigest (img: ImageRecord, ref: string): Promise<void> {
    img.repoDigests = img.repoDigests.filter((d) => d !== ref)
    await this.saveMeta(img)
  }

  async delete (id: string): Promise<void> {
    const img = this.images.get(id)
    if (img === undefined) return
    for (const t of img.repoTags) this.tags.delete(t)
    await this.saveTags()
    this.images.delete(id)
    await rm(join(this.metaDir, `${id.slice(7)}.json`), { force: true })
  }

  /**
   * Resolves a reference as clients send it. Returns the image and how it was named (a tag reference, a digest
   * reference or an ID).
   */
  lookup (ref: string): { img: ImageRecord, via: 'id' | 'tag' | 'digest', name?: string } {
    const hex = ref.startsWith('sha256:') ? ref.slice(7) : ref
    if (/^[0-9a-f]{64}$/.test(hex)) {
      const img = this.images.get(`sha256:${hex}`)
      if (img !== undefined) return { img, via: 'id' }
    }
    let parsed
    let unparsed: unknown
    try { parsed = withDefaultTag(parseReference(ref)) } catch (err) { parsed = undefined; unparsed = err }
    if (parsed !== undefined) {
      if (parsed.digest !== undefined) {
        const byDigest = familiarString({ ...parsed, tag: undefined } as typeof parsed)
        for (const img of this.images.values()) if (img.repoDigests.includes(byDigest)) return { img, via: 'digest', name: byDigest }
      } else {
        const name = familiarString(parsed)
        const id = this.tags.get(name)
        const img = id === undefined ? undefined : this.images.get(id)
        if (img !== undefined) return { img, via: 'tag', name }
      }
    }
    if (/^(sha256:)?[0-9a-f]{1,64}$/.test(ref)) {
      const id = resolvePrefix([...this.images.keys()].map((k) => k.slice(7)), hex)
      if (id !== undefined) return { img: this.images.get(`sha256:${id}`) as ImageRecord, via: 'id' }
    }
    // neither an ID nor a reference: dockerd's 400 (GetImage's ParseAnyReference), not a missing image
    if (unparsed !== undefined) throw unparsed
    throw notFound(`No such image: ${notFoundName(ref)}`)
  }

  reposOf (img: ImageRecord): Set<string> {
    return new Set([...img.repoTags, ...img.repoDigests].map((r) => {
      try { return familiarName(parseReference(r)) } catch { return r }
    }))
  }
}

/** The familiar reference with the default tag, as dockerd words "No such image" errors. */
export function notFoundName (ref: string): string {
  try {
    if (/^(sha256:)?[0-9a-f]{12,64}$/.test(ref)) return ref
    return familiarString(withDefaultTag(parseReference(ref)))
  } catch { return ref }
}
