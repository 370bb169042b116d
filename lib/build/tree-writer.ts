// Writes an EntryTree into a new, empty directory the builder owns (a layer's diff, a staging tree, the unpacked
// context) through directory descriptors: every entry is made relative to its parent's descriptor (util/scoped-fs.ts
// `at`), directories are opened O_DIRECTORY|O_NOFOLLOW, files created O_CREAT|O_EXCL|O_NOFOLLOW, symlinks made and
// never followed. No write goes through a link: not one the tree holds, not one that appears meanwhile.
// Metadata goes through the entry's own descriptor, the owner before the mode (a chown clears setuid bits);
// a directory gets its own after its contents. Small files are written with direct calls in slices that yield to the
// event loop (one thread-pool round trip per call costs far more than the call), larger ones are streamed.
import { closeSync, fchmodSync, fchownSync, futimesSync, lchownSync, lutimesSync, mkdirSync, openSync, symlinkSync, writeSync, constants as fsc } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { at, O_DIR } from '../util/scoped-fs.js'
import type { EntryTree, TreeNode } from './entry-tree.js'

export interface WriteAttrs { mode: number, uid: number, gid: number, mtime: number }

/** Where a tree's attributes and file contents come from. */
export interface TreeSource<T> {
  /** Mode (with setuid/setgid/sticky bits), owner and mtime (seconds) of a node; value undefined for implied dirs. */
  attrs (value: T | undefined, kind: TreeNode<T>['kind']): WriteAttrs
  /** Whether an 'other' entry is a regular file this writer makes (false: the caller makes it, e.g. a device). */
  isFile (value: T): boolean
  size (value: T): number
  /** The contents of a file of at most WHOLE_FILE bytes, read now. */
  bytes (value: T): Buffer
  /** The contents of a larger file, in chunks. */
  chunks (value: T): AsyncIterable<Buffer>
}

/** Files up to this size are written with one direct call; larger ones are streamed. */
export const WHOLE_FILE = 4 * 1024 * 1024
/** Direct calls yield to the event loop after this many entries or bytes. */
const SYNC_ENTRIES = 64
const SYNC_BYTES = 4 * 1024 * 1024
const O_NEW_FILE = fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW

interface Budget { entries: number, bytes: number }

/** Writes every node of `tree` under `dir`, which must be empty and the caller's own. */
export async function writeTree<T> (dir: string, tree: EntryTree<T>, src: TreeSource<T>): Promise<void> {
  const fd = openSync(dir, O_DIR)
  try {
    await writeChildren(fd, tree.root, src, { entries: 0, bytes: 0 })
  } finally { closeSync(fd) }
}

function writeAll (fd: number, data: Buffer): void {
  for (let off = 0; off < data.length;) off += writeSync(fd, data, off, data.length - off)
}

async function writeAllTo (fh: FileHandle, chunk: Buffer): Promise<void> {
  for (let off = 0; off < chunk.length;) off += (await fh.write(chunk, off, chunk.length - off)).bytesWritten
}

async function writeChildren<T> (dirFd: number, dir: TreeNode<T>, src: TreeSource<T>, budget: Budget): Promise<void> {
  for (const node of (dir.children as Map<string, TreeNode<T>>).values()) {
    const where = at(dirFd, node.name)
    const a = src.attrs(node.value, node.kind)
    if (node.kind === 'directory') {
      mkdirSync(where, 0o700)
      const fd = openSync(where, O_DIR)
      try {
        await writeChildren(fd, node, src, budget)
        fchownSync(fd, a.uid, a.gid)
        fchmodSync(fd, a.mode)
        futimesSync(fd, a.mtime, a.mtime)
      } finally { closeSync(fd) }
    } else if (node.kind === 'symlink') {
      symlinkSync(node.linkname, where)
      lchownSync(where, a.uid, a.gid)
      lutimesSync(where, a.mtime, a.mtime)
    } else {
      const v = node.value as T
      if (!src.isFile(v)) continue
      const size = src.size(v)
      if (size <= WHOLE_FILE) {
        const fd = openSync(where, O_NEW_FILE, 0o600)
        try {
          if (size > 0) writeAll(fd, src.bytes(v))
          fchownSync(fd, a.uid, a.gid)
          fchmodSync(fd, a.mode)
          futimesSync(fd, a.mtime, a.mtime)
        } finally { closeSync(fd) }
      } else {
        const fh = await open(where, O_NEW_FILE, 0o600)
        try {
          for await (const chunk of src.chunks(v)) await writeAllTo(fh, chunk)
          await fh.chown(a.uid, a.gid)
          await fh.chmod(a.mode)
          await fh.utimes(a.mtime, a.mtime)
        } finally { await fh.close() }
      }
      budget.bytes += size
    }
    if (++budget.entries >= SYNC_ENTRIES || budget.bytes >= SYNC_BYTES) {
      budget.entries = 0
      budget.bytes = 0
      await nextTurn()
    }
  }
}
