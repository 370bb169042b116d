// A tree of archive-like entries applied in order as dockerd's unpacker applies a tar inside its root (pure, no file
// system). An entry replaces what is at its path unless both are directories (then the later one's attributes win);
// a directory that is replaced takes everything below it along. An entry's parent path is resolved inside the tree
// as if the tree were `/`: symlinks already in the tree are followed there (an absolute target starts again at the
// tree's root, `..` stops at it), directories missing from the entry's own path are implied, and a missing directory
// named by a symlink is an error. What comes out never has anything below a symlink: writing it out never goes
// through a link.
import { invalidArgument } from '../errors.js'

export type EntryKind = 'directory' | 'symlink' | 'other'

export interface TreeNode<T> {
  readonly name: string
  /** Path from the root, no leading slash ('' for the root). */
  readonly path: string
  readonly parent: TreeNode<T> | null
  kind: EntryKind
  /** The entry; undefined for an implied directory (and the root). */
  value: T | undefined
  linkname: string
  /** Directories only, in the order the names first appeared. */
  children: Map<string, TreeNode<T>> | null
  alive: boolean
}

/** Linux's own limit on symlinks expanded in one lookup. */
const MAX_LINKS = 40

function components (p: string): string[] {
  return p.split('/').filter((c) => c !== '' && c !== '.')
}

export class EntryTree<T> {
  readonly root: TreeNode<T>
  private readonly order: Array<TreeNode<T>> = []
  private readonly errorPrefix: string

  /** `errorPrefix` starts the message of an entry the tree cannot take (e.g. dockerd's `Error processing tar file`). */
  constructor (errorPrefix = '') {
    this.errorPrefix = errorPrefix
    this.root = { name: '', path: '', parent: null, kind: 'directory', value: undefined, linkname: '', children: new Map(), alive: true }
  }

  private fail (op: string, path: string, why: string): never {
    throw invalidArgument(`${this.errorPrefix}${op} /${path}: ${why}`)
  }

  private child (dir: TreeNode<T>, name: string, kind: EntryKind, value: T | undefined, linkname: string): TreeNode<T> {
    const node: TreeNode<T> = {
      name,
      path: dir.path === '' ? name : `${dir.path}/${name}`,
      parent: dir,
      kind,
      value,
      linkname,
      children: kind === 'directory' ? new Map() : null,
      alive: true
    }
    ;(dir.children as Map<string, TreeNode<T>>).set(name, node)
    this.order.push(node)
    return node
  }

  /**
   * The directory `path` names, symlinks followed inside the tree. A component missing from `path` itself is made
   * (an implied directory) when `create`; one missing from a symlink's target is an error, as a non-directory is.
   */
  private directory (path: string, op: string, full: string, create: boolean): TreeNode<T> {
    const stack: Array<TreeNode<T>> = [this.root]
    // each pending component, and whether it came from a symlink's target
    const todo = components(path).map((c) => ({ c, viaLink: false }))
    let links = 0
    while (todo.length > 0) {
      const { c, viaLink } = todo.shift() as { c: string, viaLink: boolean }
      const cur = stack[stack.length - 1] as TreeNode<T>
      if (c === '..') { if (stack.length > 1) stack.pop(); continue }
      let next = (cur.children as Map<string, TreeNode<T>>).get(c)
      if (next === undefined) {
        if (!create || viaLink) this.fail(op, full, 'no such file or directory')
        next = this.child(cur, c, 'directory', undefined, '')
      }
      if (next.kind === 'symlink') {
        if (++links > MAX_LINKS) this.fail(op, full, 'too many levels of symbolic links')
        if (next.linkname.startsWith('/')) stack.length = 1
        todo.unshift(...components(next.linkname).map((t) => ({ c: t, viaLink: true })))
        continue
      }
      if (next.kind !== 'directory') this.fail(op, full, 'not a directory')
      stack.push(next)
    }
    return stack[stack.length - 1] as TreeNode<T>
  }

  /** Marks a node and everything below it as gone. */
  private bury (node: TreeNode<T>): void {
    const todo = [node]
    for (let n = todo.pop(); n !== undefined; n = todo.pop()) {
      n.alive = false
      if (n.children !== null) for (const c of n.children.values()) todo.push(c)
    }
  }

  /**
   * Applies one entry at `path` (relative, `..` already refused by the caller); returns its node, whose `path` is
   * where it landed after the parents' symlinks were followed.
   */
  add (path: string, kind: EntryKind, value: T, linkname = ''): TreeNode<T> {
    const parts = components(path)
    const name = parts.pop()
    if (name === undefined || name === '..') this.fail('open', path, 'invalid entry name')
    const dir = this.directory(parts.join('/'), kind === 'directory' ? 'mkdir' : kind === 'symlink' ? 'symlink' : 'open', path, true)
    const children = dir.children as Map<string, TreeNode<T>>
    const existing = children.get(name)
    if (existing !== undefined) {
      if (existing.kind === 'directory' && kind === 'directory') {
        existing.value = value
        return existing
      }
      this.bury(existing)
      children.delete(name)
    }
    return this.child(dir, name, kind, value, linkname)
  }

  /**
   * The node at `path` with its parents' symlinks followed inside the tree (the last component is not followed),
   * or undefined when it does not exist (a hard link's target, as link(2) finds it).
   */
  lookup (path: string): TreeNode<T> | undefined {
    const parts = components(path)
    const name = parts.pop()
    if (name === undefined) return this.root
    let dir: TreeNode<T>
    try { dir = this.directory(parts.join('/'), 'link', path, false) } catch { return undefined }
    if (name === '..') return dir.parent ?? dir
    return dir.children?.get(name)
  }

  /** The nodes that are still there, in the order they were added (a parent always before its children). */
  live (): Array<TreeNode<T>> {
    return this.order.filter((n) => n.alive)
  }
}
