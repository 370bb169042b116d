// The container list (GET /containers/json's containers, in dockerd's order and filters), sizes, and prune. The
// list's bytes are lib/api/containers' (list-reply.ts).
import { isEngineError, describeError } from '../errors.js'
import { levelLogger } from '../log.js'
import type { Filters } from '../http/query.js'
import type { ImageService } from '../image/image-service.js'
import { dirSize } from '../util/du.js'
import type { ContainerHandle } from './container-handle.js'
import type { ContainerService } from './container-service.js'
import { isRunning } from './container.js'
import { checkListFilters, matchContainer } from './container-filters.js'
import type { LinearRegexp } from '../util/linear-regexp.js'

const ops = levelLogger('engine:containers')

/** Which containers GET /containers/json lists: running ones unless `all` (or a limit or a status filter), newest first. */
export interface ListOptions { all: boolean, limit: number, filters: Filters }

export interface ContainerListOptions {
  containers: ContainerService
  images: ImageService
}

export class ContainerList {
  private readonly o: ContainerListOptions

  constructor (o: ContainerListOptions) {
    this.o = o
  }

  async containerSizes (c: ContainerHandle): Promise<{ rw: number, rootfs: number }> {
    const rw = c.rec.rootfsKind === 'overlay' ? await dirSize(c.rootfs.upper) : await dirSize(c.rootfs.merged)
    const img = this.o.images.store.byId(c.rec.imageId)
    return { rw, rootfs: rw + (img?.size ?? 0) }
  }

  /** The containers the options choose, newest first. */
  listContainers (o: ListOptions): ContainerHandle[] {
    let list = this.o.containers.all().sort((a, b) => b.createdMs - a.createdMs)
    const f = o.filters
    const status = f.get('status')
    checkListFilters(f)
    const all = o.all || (o.limit > 0) || (status !== undefined && status.length > 0)
    if (!all) list = list.filter((c) => isRunning(c.rec))
    const regexps = new Map<string, LinearRegexp | null>()
    if (f.size > 0) list = list.filter((c) => matchContainer(c, f, (ref) => this.o.containers.find(ref), (ref) => { try { return this.o.images.store.lookup(ref).img.id } catch { return undefined } }, regexps))
    if (o.limit > 0) list = list.slice(0, o.limit)
    return list
  }

  /** Removes the stopped containers the filters (label, until) choose; their IDs and the bytes reclaimed. */
  async pruneContainers (filters: Filters): Promise<{ deleted: string[], reclaimed: number }> {
    const deleted: string[] = []
    let space = 0
    for (const c of this.o.containers.all()) {
      if (isRunning(c.rec) || c.rec.state.status === 'removing') continue
      if (!matchContainer(c, new Map([...filters].filter(([k]) => k === 'label')), () => undefined, () => undefined)) continue
      const until = filters.get('until')?.[0]
      if (until !== undefined && Number(BigInt(c.rec.created) / 1_000_000_000n) > Number(until)) continue
      // one started or removed meanwhile is skipped, as dockerd's prune skips a container it fails to remove
      try {
        const rw = (await this.containerSizes(c)).rw
        await this.o.containers.remove(c.id, false, false)
        space += rw
        deleted.push(c.id)
      } catch (err) {
        if (!isEngineError(err) || (err.kind !== 'conflict' && err.kind !== 'not-found')) ops.warn('failed to prune container %s: %s', c.id, describeError(err))
      }
    }
    return { deleted, reclaimed: space }
  }
}
