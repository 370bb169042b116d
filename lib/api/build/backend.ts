// What the build routes need (BuildRunner implements it): method-only, in lib/build's vocabulary.
import type { Readable } from 'node:stream'
import type { BuildProgress } from '../../build/backend.js'
import type { PruneResult, PruneSpace } from '../../build/build-cache.js'
import type { BuildRequest } from '../../build/build-runner.js'

export interface BuildApiBackend {
  /** Reads the context from `body` and builds; resolves with the image ID. `clientGone` aborts the build. */
  build (req: BuildRequest, body: Readable, out: BuildProgress, clientGone: AbortSignal): Promise<string>
  prune (o: { untilMs?: number, space: PruneSpace }): Promise<PruneResult>
  /** Aborts the running build with that ID, if any. */
  cancel (buildId: string): void
}
