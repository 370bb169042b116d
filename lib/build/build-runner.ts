// Builds as the API asks for them (lib/api/build/backend.ts): one classic build from a context stream, the build
// cache prune, and cancel by build ID. It owns each build's scratch directory and the running builds' aborts.
import { mkdir, rm, statfs } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { dirname, join } from 'node:path'
import type { Readable } from 'node:stream'
import type { BuildOptions } from './build-state.js'
import { pruneBuildCache, type PruneResult, type PruneSpace } from './build-cache.js'
import type { BuildBackend, BuildProgress } from './backend.js'
import { hostArch } from '../image/platform.js'
import { levelLogger } from '../log.js'
import { describeError } from '../errors.js'

const ops = levelLogger('engine:build')

/** A build as the route decoded it: the builder's options but for what the runner provides. */
export type BuildRequest = Omit<BuildOptions, 'context' | 'contextDir' | 'workDir' | 'arch' | 'signal'> & {
  /** The client's build ID ('' for none): what POST /build/cancel names. */
  buildId: string
}

export interface BuildRunnerDeps {
  backend: BuildBackend
  /** Where each build gets its own temp directory. */
  tmpRoot: string
  /** Limit on the uncompressed context. */
  contextLimit: number
}

export class BuildRunner {
  private readonly d: BuildRunnerDeps
  private readonly running = new Map<string, AbortController>()

  constructor (d: BuildRunnerDeps) { this.d = d }

  async build (req: BuildRequest, body: Readable, out: BuildProgress, clientGone: AbortSignal): Promise<string> {
    const abort = new AbortController()
    const { buildId, ...options } = req
    if (buildId !== '') this.running.set(buildId, abort)
    const onClientGone = (): void => { abort.abort(new Error('the client went away')) }
    clientGone.addEventListener('abort', onClientGone)
    const dir = join(this.d.tmpRoot, `build-${randomBytes(8).toString('hex')}`)
    try {
      await mkdir(dir, { recursive: true, mode: 0o700 })
      // the builder (Dockerfile parser, steps, context copy) is loaded at the first build: a daemon's start and its
      // memory do not carry it until then
      const [{ BuildContext }, { Builder }] = await Promise.all([import('./build-context.js'), import('./builder.js')])
      const context = await BuildContext.ingest(body, join(dir, 'context.tar'), { limit: this.d.contextLimit, dockerfile: req.dockerfile })
      const o: BuildOptions = { ...options, context, contextDir: join(dir, 'context'), workDir: join(dir, 'work'), arch: hostArch(), signal: abort.signal }
      return (await new Builder(this.d.backend, o, out).build()).imageId
    } finally {
      clientGone.removeEventListener('abort', onClientGone)
      if (buildId !== '' && this.running.get(buildId) === abort) this.running.delete(buildId)
      await rm(dir, { recursive: true, force: true }).catch((err) => { ops.warn('a build leaves %s (removed at the next start): %s', dir, describeError(err)) })
    }
  }

  async prune (o: { untilMs?: number, space: PruneSpace }): Promise<PruneResult> {
    return await pruneBuildCache(this.d.backend, { ...o, freeBytes: async () => await freeBytesAt(this.d.tmpRoot) })
  }

  cancel (buildId: string): void {
    this.running.get(buildId)?.abort(new Error('build cancelled'))
  }
}

/** The bytes free to an unprivileged writer on the filesystem of `dir` (or of its nearest existing parent). */
async function freeBytesAt (dir: string): Promise<number> {
  for (let d = dir; ; d = dirname(d)) {
    try {
      const s = await statfs(d)
      return s.bavail * s.bsize
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(d) === d) throw err
    }
  }
}

/** 8 GiB: dockerd has no limit of its own; ours keeps one request from filling the disk unannounced. */
export const DEFAULT_CONTEXT_LIMIT = 8 * 1024 ** 3
