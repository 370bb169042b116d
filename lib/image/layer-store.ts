// Unpacked layers, one directory per chain ID (the layer and everything below it), ready to be overlayfs lowerdirs.
//
//   <root>/<chainhex>/diff/        the layer's files (overlay format)
//   <root>/<chainhex>/meta.json    {"diffId","parent","size","contentSize"}; written last, so a layer without it
//                                  is incomplete (size: the layer tar's bytes; contentSize: what its files hold)
//
// Whiteouts in layers that sit on a parent become what overlayfs reads in a lower directory: `.wh.NAME` a 0/0
// character device NAME (one made with mknod(1), the others hard links to it, as overlayfs itself shares whiteouts),
// `.wh..wh..opq` the xattr trusted.overlay.opaque=y on its directory (setfattr(1), package `attr`). Node has neither
// mknod nor setxattr. In a base layer they hide nothing and are skipped.
import { createHash, randomBytes } from 'node:crypto'
import { runTool, type ToolError } from '../util/run-tool.js'
import { mkdir, readFile, rename, rm, readdir, stat, lstat, link } from 'node:fs/promises'
import { join, posix } from 'node:path'
import type { Readable } from 'node:stream'
import { extractTar } from '../stream/tar.js'
import { writeJsonAtomic } from '../util/atomic.js'
import { internal } from '../errors.js'
import { logger } from '../log.js'
import { PRIVATE_DIR } from '../util/private-modes.js'
import { contentSize } from '../util/du.js'

const log = logger('engine:layers')

const WHITEOUT_PREFIX = '.wh.'
const WHITEOUT_OPAQUE = '.wh..wh..opq'

async function run (cmd: string, args: string[]): Promise<void> {
  await runTool(cmd, args, 60_000).catch((err: ToolError) => {
    if (err.notInstalled) throw internal(`${cmd} is not installed (apt-get install ${cmd === 'setfattr' ? 'attr' : 'coreutils'}); it is needed for whiteouts in image layers`, { cause: err })
    throw Object.assign(internal(err.message, { cause: err }), { permission: err.code === 'EPERM' || err.code === 'EACCES' })
  })
}

/** Is every existing component of `rel` (below `root`) a real directory? Creates missing ones. */
async function plainDirectory (root: string, rel: string): Promise<boolean> {
  let cur = root
  for (const part of rel.split('/').filter((p) => p !== '')) {
    cur = join(cur, part)
    try {
      const st = await lstat(cur)
      if (!st.isDirectory()) return false
    } catch {
      await mkdir(cur, { mode: 0o755 })
    }
  }
  return true
}

/** Turns the recorded whiteouts of an extracted layer into overlayfs form. */
async function applyWhiteouts (tmp: string, diff: string, whiteouts: string[], opaque: string[]): Promise<void> {
  let template: string | null = null
  try {
    for (const rel of whiteouts) {
      const dir = posix.dirname(rel)
      const target = posix.join(dir, posix.basename(rel).slice(WHITEOUT_PREFIX.length))
      if (!await plainDirectory(diff, dir === '.' ? '' : dir)) { log('whiteout %s sits under a non-directory; skipped', rel); continue }
      try { await lstat(join(diff, target)); log('whiteout %s: the layer also has %s; kept the entry', rel, target); continue } catch { /* absent: good */ }
      if (template === null) {
        template = join(tmp, 'whiteout')
        await run('mknod', [template, 'c', '0', '0'])
      }
      await link(template, join(diff, target))
    }
    const dirs: string[] = []
    for (const rel of opaque) {
      if (!await plainDirectory(diff, rel)) { log('opaque marker in %s sits under a non-directory; skipped', rel); continue }
      dirs.push(rel === '' ? diff : join(diff, rel))
    }
    for (let i = 0; i < dirs.length; i += 200) {
      await run('setfattr', ['-n', 'trusted.overlay.opaque', '-v', 'y', '--', ...dirs.slice(i, i + 200)])
    }
  } catch (err) {
    if ((err as { permission?: boolean }).permission === true) {
      // without CAP_MKNOD / CAP_SYS_ADMIN no container can run here either; keep the layer usable for inspection
      log('cannot create whiteouts (%s); deletions in this layer are not represented', (err as Error).message)
      return
    }
    throw err
  } finally {
    if (template !== null) await rm(template, { force: true })
  }
}

export interface LayerMeta {
  diffId: string
  parent: string
  /** The layer tar's bytes. */
  size: number
  /** What the unpacked files hold, as dockerd sizes a layer (util/du.ts contentSize); absent in older records. */
  contentSize?: number
}

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
    await mkdir(this.root, { recursive: true, mode: PRIVATE_DIR })
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

  /**
   * Unpacks an uncompressed layer tar as `chainId`; a no-op when it exists (`tar` is then never called). `meta` is
   * written after the extraction, so a caller that streams the tar may fill in `meta.size` while it flows.
   */
  async unpack (chainId: string, meta: LayerMeta, tar: () => Readable): Promise<void> {
    if (await this.has(chainId)) return
    const tmp = join(this.root, `tmp-${randomBytes(8).toString('hex')}`)
    await mkdir(tmp, { mode: PRIVATE_DIR })
    await mkdir(join(tmp, 'diff'), { mode: 0o755 })
    const whiteouts: string[] = []
    const opaque: string[] = []
    try {
      await extractTar(tar(), join(tmp, 'diff'), {
        skip: (name) => {
          const base = posix.basename(name)
          if (!base.startsWith(WHITEOUT_PREFIX)) return false
          if (base === WHITEOUT_OPAQUE) opaque.push(posix.dirname(name) === '.' ? '' : posix.dirname(name))
          else whiteouts.push(name)
          return true
        }
      })
      // whiteouts in a base layer (and in imported single-layer trees) have nothing below them to hide
      if (meta.parent !== '' && (whiteouts.length > 0 || opaque.length > 0)) await applyWhiteouts(tmp, join(tmp, 'diff'), whiteouts, opaque)
      await writeJsonAtomic(join(tmp, 'meta.json'), { ...meta, contentSize: await contentSize(join(tmp, 'diff')) })
      await rm(this.dir(chainId), { recursive: true, force: true })
      await rename(tmp, this.dir(chainId))
    } catch (err) {
      await rm(tmp, { recursive: true, force: true })
      throw err
    }
  }

  /**
   * A layer tree written by the caller (`fill` gets the diff directory) rather than unpacked from a tar; `commit`
   * files it under its chain ID once that is known (the tar is hashed meanwhile), `abort` drops it. For writers
   * that know the tree already (the builder's COPY): no tar is parsed back.
   */
  async stage (fill: (diffDir: string) => Promise<void>): Promise<{ commit: (chainId: string, meta: LayerMeta) => Promise<void>, abort: () => Promise<void> }> {
    const tmp = join(this.root, `tmp-${randomBytes(8).toString('hex')}`)
    await mkdir(tmp, { mode: PRIVATE_DIR })
    await mkdir(join(tmp, 'diff'), { mode: 0o755 })
    const abort = async (): Promise<void> => { await rm(tmp, { recursive: true, force: true }) }
    try {
      await fill(join(tmp, 'diff'))
    } catch (err) {
      await abort()
      throw err
    }
    return {
      commit: async (chainId, meta) => {
        if (await this.has(chainId)) { await abort(); return }
        await writeJsonAtomic(join(tmp, 'meta.json'), { ...meta, contentSize: await contentSize(join(tmp, 'diff')) })
        await rm(this.dir(chainId), { recursive: true, force: true })
        await rename(tmp, this.dir(chainId))
      },
      abort
    }
  }

  /**
   * The layer's content size (LayerMeta.contentSize), measured once and written into a record that predates it;
   * null when the layer is not unpacked.
   */
  async contentSize (chainId: string): Promise<number | null> {
    const meta = await this.meta(chainId)
    if (meta === null) return null
    if (meta.contentSize !== undefined) return meta.contentSize
    const measured = await contentSize(this.diffPath(chainId))
    // best effort: a record not written back (the layer removed meanwhile) is measured again when next asked
    await writeJsonAtomic(join(this.dir(chainId), 'meta.json'), { ...meta, contentSize: measured }).catch(() => {})
    return measured
  }

  /** Chain IDs of the complete layers. */
  async list (): Promise<string[]> {
    return (await readdir(this.root)).filter((n) => /^[0-9a-f]{64}$/.test(n)).map((n) => `sha256:${n}`)
  }

  async remove (chainId: string): Promise<void> {
    await rm(this.dir(chainId), { recursive: true, force: true })
  }
}
