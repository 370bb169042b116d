// What the builder needs from the engine: a narrow, method-only interface (lib/engine/build-backend.ts implements it).
import type { Readable } from 'node:stream'
import type { ImageConfigBlob, ImageRunConfig } from '../image/types.js'

/** The image facts the builder reads. */
export interface BuildImage {
  id: string
  parent: string
  config: ImageConfigBlob
  repoTags: string[]
  repoDigests: string[]
  /** Sum of the layer sizes. */
  size: number
}

/** The progress sink of one build (the route's JSON stream). */
export interface BuildProgress {
  /** A `{"stream": text}` record. */
  stream (text: string): void
  /** A `{"aux": value}` record. */
  aux (value: unknown): void
}

/** The container a RUN step runs in. */
export interface RunSpec {
  imageId: string
  config: ImageRunConfig & { Cmd: string[], Env: string[] }
  hostConfig: Record<string, unknown>
}

export interface BuildBackend {
  /** A local image by reference or ID, or undefined. */
  findImage (ref: string): BuildImage | undefined
  imageById (id: string): BuildImage | undefined
  /** All local images (the cache probe looks for children of a parent). */
  allImages (): BuildImage[]
  /** Pulls a base image, reporting on the build's progress stream. */
  pullImage (ref: string, platform: string, registryConfig: Record<string, unknown>, progress: BuildProgress, signal: AbortSignal): Promise<BuildImage>
  /** The unpacked layer directories of an image, lowest first. */
  layerDirs (imageId: string): Promise<string[]>
  /**
   * An image's filesystem as a directory to read from (COPY --from), under `dir` (the build's own scratch): its one
   * layer as is, or an overlay mount of its layers. `release` unmounts.
   */
  mountImage (imageId: string, dir: string): Promise<{ root: string, release: () => Promise<void> }>
  /** Creates a container for a RUN step; returns its ID and create warnings. */
  createContainer (spec: RunSpec): Promise<{ id: string, warnings: string[] }>
  /** Starts the container, streams its output (stdout/stderr chunks) until it exits; resolves with the exit code. */
  runContainer (id: string, onOutput: (stream: 'stdout' | 'stderr', chunk: Buffer) => void, signal: AbortSignal): Promise<number>
  /** Kills (if running) and removes a container. */
  removeContainer (id: string): Promise<void>
  /** The container's filesystem changes as a new layer on `parentId`, with the given config: the new image. */
  commitContainer (id: string, parentId: string, config: ImageConfigBlob): Promise<BuildImage>
  /**
   * A new image from a layer tar (or no layer when tar is null) on `parentId` ('' for none). `fill`, when given,
   * writes the same tree into the layer's directory (instead of unpacking the tar). The new layer's diff ID is
   * appended to `config.rootfs.diff_ids`.
   */
  createImage (parentId: string, tar: Readable | null, config: ImageConfigBlob, fill?: (diffDir: string) => Promise<void>): Promise<BuildImage>
  /** Tags an image (`name:tag`). */
  tagImage (id: string, ref: string): Promise<void>
  /** Removes an image by ID (cache prune). */
  removeImage (id: string): Promise<void>
  /** IDs of images some container uses (prune keeps them). */
  imageInUse (id: string): boolean
}
