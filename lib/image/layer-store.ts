// Unpacked layers, one directory per chain ID (the layer and everything below it), ready to be overlayfs lowerdirs.
//
//   <root>/<chainhex>/diff/        the layer's files (overlay format)
//   <root>/<chainhex>/meta.json    {"diffId","parent","size"}; written last, so a layer without it is incomplete
import { createHash, randomBytes } from 'node:crypto'
import { mkdir, readFile, rename, rm, readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { extractTar } from '../stream/tar.js'
import { writeJsonAtomic } from '../util/atomic.js'
import { logger } from '../log.js'

const log = logger('engine:layers')

export interface LayerMeta { diffId: string, parent: string, size: number }

export function chainIds (diffIds: string[]): string[] {
  const out: string[] = []
  for (const d of diffIds) {
    const prev = out[out.length - 1]
    out.push(prev === undefined ? d : `sha256:${createHash('sha256').update(`${prev} ${d}`).digest('hex')}`)
  }
  return out
}

export class LayerStore {
  readonly root: string
  constructor (root: string) { this.root = root }

  async init (): Promise<void> {
    await mkdir(this.root, { recursive: true })
    for (const name of await readdir(this.root)) {
      if (name.startsWith('tmp-')) { await rm(join(this.root, name), { recursive: true, force: true }); continue }
      try { await stat(join(this.root, name, 'meta.json')) } catch {
        log('removing incomplete layer %s', name)
        await rm(join(this.root, name), { recursive: true, force: true })
      }
    }
  }

  dir (chainId: string): string { return join(this.root, chainId.slice('sha256:'.length)) }
  diffPath (chainId: string): string { return join(this.dir(chainId), 'diff') }

  async has (chainId: string): Promise<boolean> {
    try { await stat(join(this.dir(chainId), 'meta.json')); return true } catch { return false }
  }

  async meta (chainId: string): Promise<LayerMeta | null> {
    try { return JSON.parse(await readFile(join(this.dir(chainId), 'meta.json'), 'utf8')) as LayerMeta } catch { return null }
  }

  /** Unpacks an uncompressed layer tar as `chainId`; a no-op when it exists. */
  async unpack (chainId: string, meta: LayerMeta, tar: () => Readable): Promise<void> {
    if (await this.has(chainId)) return
    const tmp = join(this.root, `tmp-${randomBytes(8).toString('hex')}`)
    await mkdir(join(tmp, 'diff'), { recursive: true })
    try {
      await extractTar(tar(), join(tmp, 'diff'), {
        // whiteouts in imported single-layer trees have nothing below them to hide
        skip: (name) => name.split('/').pop()?.startsWith('.wh.') === true
      })
      await writeJsonAtomic(join(tmp, 'meta.json'), meta)
      await rm(this.dir(chainId), { recursive: true, force: true })
      await rename(tmp, this.dir(chainId))
    } catch (err) {
      await rm(tmp, { recursive: true, force: true })
      throw err
    }
  }

  async remove (chainId: string): Promise<void> {
    await rm(this.dir(chainId), { recursive: true, force: true })
  }
}
