// Which compressed blobs a layer (by diff ID) is known as, and in which repositories: filled in by pulls and pushes,
// read by pushes to say "Layer already exists" (HEAD in the target repository) or "Mounted from" (a cross-repository
// mount on the same registry) instead of uploading again. dockerd keeps the same table (distribution/metadata).
//
//   <dataRoot>/distribution/blob-sources.json   {"<diffId>":[{"digest","mediaType","size","repos":["host/path",…]}]}
import { mkdir, readFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { writeJsonAtomic } from '../util/atomic.js'
import { levelLogger, logger } from '../log.js'
import { describeError } from '../errors.js'
import { PRIVATE_DIR } from '../util/private-modes.js'

const log = logger('engine:distribution')
const ops = levelLogger('engine:distribution')

export interface BlobSource {
  digest: string
  mediaType: string
  size: number
  /** `registry-host/path` of repositories known to hold the blob, most recent last. */
  repos: string[]
}

const MAX_REPOS = 16
const MAX_SOURCES = 8

export class BlobSources {
  private readonly file: string
  private table: Map<string, BlobSource[]> | null = null
  private saving: Promise<void> = Promise.resolve()

  constructor (file: string) { this.file = file }

  private async load (): Promise<Map<string, BlobSource[]>> {
    if (this.table !== null) return this.table
    let t = new Map<string, BlobSource[]>()
    try {
      t = new Map(Object.entries(JSON.parse(await readFile(this.file, 'utf8')) as Record<string, BlobSource[]>))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log('ignoring unreadable %s: %s', this.file, (err as Error).message)
    }
    this.table ??= t
    return this.table
  }

  async get (diffId: string): Promise<BlobSource[]> {
    return (await this.load()).get(diffId) ?? []
  }

  /** Records that `repo` (host/path) holds `blob` for the layer `diffId`. */
  async add (diffId: string, blob: { digest: string, mediaType: string, size: number }, repo: string): Promise<void> {
    const t = await this.load()
    const list = t.get(diffId) ?? []
    let entry = list.find((b) => b.digest === blob.digest)
    if (entry === undefined) {
      entry = { ...blob, repos: [] }
      list.push(entry)
      if (list.length > MAX_SOURCES) list.shift()
    }
    if (entry.repos[entry.repos.length - 1] === repo) return
    entry.repos = entry.repos.filter((r) => r !== repo)
    entry.repos.push(repo)
    if (entry.repos.length > MAX_REPOS) entry.repos.shift()
    t.set(diffId, list)
    const snapshot = Object.fromEntries(t)
    this.saving = this.saving.then(async () => {
      await mkdir(dirname(this.file), { recursive: true, mode: PRIVATE_DIR })
      await writeJsonAtomic(this.file, snapshot)
    }).catch((err) => { ops.warn('the layers\' known sources were not written to %s (later pushes may upload again what they could mount): %s', this.file, describeError(err)) })
    await this.saving
  }
}
