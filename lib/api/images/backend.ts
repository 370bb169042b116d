// What the image routes need (ImageOps in lib/engine implements them): method-only, typed in lib/image's and
// lib/distribution's vocabulary; the wire shapes are wire.ts's.
import type { Readable } from 'node:stream'
import type { Filters } from '../../http/query.js'
import type { ImageRecord } from '../../image/types.js'
import type { DeleteRecord } from '../../image/image-service.js'
import type { LoadReporter } from '../../image/image-archive.js'
import type { PullRequest } from '../../distribution/puller.js'
import type { PushRequest } from '../../distribution/pusher.js'
import type { AuthConfig } from '../../distribution/auth-config.js'
import type { ProgressStream } from '../../distribution/progress.js'

/** One step of an image's history, newest first (GET /images/{name}/history). */
export interface ImageHistoryEntry {
  /** The image made by this step along the parent chain, or '<missing>'. */
  id: string
  /** Seconds since the epoch. */
  created: number
  createdBy: string
  tags: string[] | null
  size: number
  comment: string
}

/** POST /images/create?fromSrc=-'s options. */
export interface ImageImportOptions { repo: string, tag: string, message: string, changes: string[], platform: string }

/** One of Docker Hub's search results. */
export interface SearchResult { name: string, description: string, stars: number, official: boolean, automated: boolean }

export interface ImageBackend {
  containerCount (imageId: string): number
  /** Image ID → the bytes of its layers other images use too (SharedSize). */
  sharedSizes (): Map<string, number>
  /** The images `all` and the filters keep, newest first. */
  listImages (all: boolean, filters: Filters): ImageRecord[]
  /** The image and its layers' directories, lowest first. */
  inspectImage (ref: string): Promise<{ img: ImageRecord, layerDirs: string[] }>
  imageHistory (ref: string): Promise<ImageHistoryEntry[]>
  tagImage (ref: string, repo: string, tag: string): Promise<void>
  removeImage (ref: string, force: boolean, noprune: boolean): Promise<DeleteRecord[]>
  /** Removes the unused images the filters choose; what each removal did and the bytes that left the disk. */
  pruneImages (filters: Filters): Promise<{ deleted: DeleteRecord[], reclaimed: number }>
  searchImages (term: string, limit: number, signal: AbortSignal): Promise<SearchResult[]>
  /** Imports a root filesystem tar (plain or gzip) as a one-layer image; its ID. */
  importImage (src: Readable, o: ImageImportOptions): Promise<string>
  /** Pulls from a registry, reporting on the progress stream. */
  pullImage (o: PullRequest, out: ProgressStream): Promise<void>
}

/** What the save and load routes need. */
export interface ImageArchiveBackend {
  /** `docker save`'s tar of the named images (names resolved as dockerd does). */
  saveImages (names: string[]): Promise<Readable>
  loadImages (src: Readable, report: LoadReporter, quiet: boolean): Promise<void>
}

/** What the registry routes (push, login, remote inspect) need. */
export interface DistributionBackend {
  pushImage (o: PushRequest, out: ProgressStream): Promise<void>
  login (auth: AuthConfig, signal: AbortSignal): Promise<{ identityToken: string }>
  /** GET /distribution/{name}/json's reply, as lib/distribution spells it. */
  inspectRemote (name: string, auth: AuthConfig, signal: AbortSignal): Promise<unknown>
}
