// Tar archives for specs: a ustar writer of its own (archives not written by the code under test), and archives packed
// and listed through lib/stream/tar-tree (for specs of what travels in them rather than of the format).
import type { Readable } from 'node:stream'
import { createReadStream } from 'node:fs'
import { tarStreamOf, addEntry, tarExtractor, type TarEntry as ExtractedEntry } from '../../lib/stream/tar-tree.js'
import { busyboxTar } from './engine.js'

export interface TarEntry {
  name: string
  type?: 'file' | 'dir' | 'symlink' | 'link'
  body?: Buffer | string
  linkname?: string
  mode?: number
  /** seconds since the epoch; 1700000000 unless given */
  mtime?: number
}

function octal (n: number, width: number): string {
  return n.toString(8).padStart(width - 1, '0') + '\0'
}

/** A ustar archive (names up to 100 bytes, uid and gid 0), ending with two zero blocks. */
export function makeTar (entries: TarEntry[]): Buffer {
  const parts: Buffer[] = []
  for (const e of entries) {
    const type = e.type ?? 'file'
    const body = type === 'file' ? Buffer.from(e.body ?? '') : Buffer.alloc(0)
    const h = Buffer.alloc(512)
    h.write(e.name, 0, 100, 'utf8')
    h.write(octal(e.mode ?? (type === 'dir' ? 0o755 : type === 'symlink' ? 0o777 : 0o644), 8), 100, 'ascii')
    h.write(octal(0, 8), 108, 'ascii')
    h.write(octal(0, 8), 116, 'ascii')
    h.write(octal(body.length, 12), 124, 'ascii')
    h.write(octal(e.mtime ?? 1700000000, 12), 136, 'ascii')
    h.write('        ', 148, 'ascii')
    h.write({ file: '0', dir: '5', symlink: '2', link: '1' }[type], 156, 'ascii')
    if (e.linkname !== undefined) h.write(e.linkname, 157, 100, 'utf8')
    h.write('ustar\0', 257, 'ascii')
    h.write('00', 263, 'ascii')
    let sum = 0
    for (const b of h) sum += b
    h.write(octal(sum, 7) + ' ', 148, 'ascii')
    parts.push(h, body)
    if (body.length % 512 !== 0) parts.push(Buffer.alloc(512 - (body.length % 512)))
  }
  parts.push(Buffer.alloc(1024))
  return Buffer.concat(parts)
}

export interface PackEntry { name: string, type?: 'file' | 'symlink' | 'link' | 'directory', body?: Buffer | string, linkname?: string, mode?: number, uid?: number }

/** A tar packed with tar-tree: files 0644 (owner uid:uid, default root), others 0755, unless a mode is given. */
export async function tarOf (entries: PackEntry[]): Promise<Buffer> {
  const tar = tarStreamOf(async (pack) => {
    for (const e of entries) {
      const type = e.type ?? 'file'
      if (type === 'file') await addEntry(pack, { name: e.name, type, mode: e.mode ?? 0o644, uid: e.uid ?? 0, gid: e.uid ?? 0 }, Buffer.isBuffer(e.body) ? e.body : Buffer.from(e.body ?? ''))
      else await addEntry(pack, { name: e.name, type, mode: e.mode ?? 0o755, ...(e.linkname !== undefined ? { linkname: e.linkname } : {}) })
    }
  })
  const chunks: Buffer[] = []
  for await (const c of tar as AsyncIterable<Buffer>) chunks.push(c)
  return Buffer.concat(chunks)
}

export interface ListedEntry { name: string, type: string, linkname: string, mode: number, uid: number, gid: number, body: Buffer }

/** The entries of a tar (a buffer or a stream), read with tar-tree's extractor, bodies included. */
export async function listTar (src: Buffer | Readable): Promise<ListedEntry[]> {
  const ex = tarExtractor()
  const out: ListedEntry[] = []
  const done = new Promise<void>((resolve, reject) => {
    ex.on('error', reject)
    ex.on('finish', () => { resolve() })
  })
  const reading = (async () => {
    for await (const e of ex as AsyncIterable<unknown>) {
      const entry = e as ExtractedEntry
      const chunks: Buffer[] = []
      for await (const c of entry as AsyncIterable<Buffer>) chunks.push(c)
      out.push({ name: entry.header.name, type: entry.header.type, linkname: entry.header.linkname ?? '', mode: entry.header.mode, uid: entry.header.uid, gid: entry.header.gid, body: Buffer.concat(chunks) })
    }
  })()
  if (Buffer.isBuffer(src)) ex.end(src)
  else { for await (const c of src as AsyncIterable<Buffer>) ex.write(c); ex.end(undefined) }
  await Promise.all([done, reading])
  return out
}

async function collect (s: Readable): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const c of s as AsyncIterable<Buffer>) chunks.push(c)
  return Buffer.concat(chunks)
}

/** The busybox rootfs plus the entries given (a later entry replaces an earlier one of its name), as one layer tar. */
export async function busyboxWith (extra: Array<{ name: string, type: string, mode: number, devmajor?: number, devminor?: number, body?: Buffer, linkname?: string }>): Promise<Buffer> {
  const ex = tarExtractor()
  const entries: Array<{ header: ExtractedEntry['header'], body: Buffer }> = []
  const reading = (async () => {
    for await (const e of ex as AsyncIterable<unknown>) {
      const entry = e as ExtractedEntry
      entries.push({ header: entry.header, body: await collect(entry) })
    }
  })()
  createReadStream(busyboxTar()).pipe(ex)
  await reading
  return await collect(tarStreamOf(async (pack) => {
    for (const e of entries) await addEntry(pack, e.header, e.body)
    for (const e of extra) {
      await addEntry(pack, { name: e.name, type: e.type as 'file', mode: e.mode, uid: 0, gid: 0, mtime: new Date(1_600_000_000_000), devmajor: e.devmajor ?? 0, devminor: e.devminor ?? 0, ...(e.linkname !== undefined ? { linkname: e.linkname } : {}) }, e.body ?? Buffer.alloc(0))
    }
  }))
}
