// Internal image model (camelCase). The Engine API's image shapes are produced only in lib/api/images/wire.ts.

/** The OCI/Docker image config's `config` object, as stored in the config blob (PascalCase there, by spec). */
export interface ImageRunConfig {
  User?: string
  ExposedPorts?: Record<string, object>
  Env?: string[] | null
  Entrypoint?: string[] | null
  Cmd?: string[] | null
  Volumes?: Record<string, object> | null
  WorkingDir?: string
  Labels?: Record<string, string> | null
  StopSignal?: string
  OnBuild?: string[] | null
  Shell?: string[] | null
  Healthcheck?: unknown
  ArgsEscaped?: boolean
}

/** The image config blob (application/vnd.oci.image.config.v1+json). */
export interface ImageConfigBlob {
  architecture: string
  os: string
  variant?: string
  created?: string
  author?: string
  comment?: string
  docker_version?: string
  config?: ImageRunConfig
  container_config?: ImageRunConfig
  rootfs: { type: 'layers', diff_ids: string[] }
  history?: Array<{ created?: string, created_by?: string, comment?: string, empty_layer?: boolean, author?: string }>
  /** dockerd keeps the parent image ID only in its own metadata; we keep it there too (ImageRecord.parent). */
}

export interface ImageRecord {
  /** `sha256:<hex>` — the digest of the config blob. */
  id: string
  config: ImageConfigBlob
  /** Familiar references, e.g. `busybox:latest`, `localhost:5000/x:1`. */
  repoTags: string[]
  /** Familiar references with digests, e.g. `busybox@sha256:…`. */
  repoDigests: string[]
  /** Parent image ID (`sha256:…`) or '' (commit sets it). */
  parent: string
  /** Sum of layerSizes. */
  size: number
  /**
   * Each layer's size, lowest first, as dockerd reports it: what the layer's unpacked files hold (not its tar's
   * bytes). Absent only while an older record is loaded.
   */
  layerSizes?: number[]
  /** RFC 3339 time of the last tag change, or undefined. */
  lastTagTime?: string
}

/** What the container side needs from the image side. */
export interface ImageProvider {
  /**
   * Resolves a reference as given by a client (`busybox`, `busybox:latest`, `docker.io/library/busybox`, an ID,
   * a unique ID prefix, `name@sha256:…`). Throws not-found `No such image: <familiar ref with tag>`.
   */
  resolveImage (ref: string): Promise<ImageRecord>
  /** The unpacked layer directories of an image, lowest layer first (overlayfs lowerdir order is the reverse). */
  layerPaths (image: ImageRecord): Promise<string[]>
  /** Resolves once the image removals under way are over (they looked at the images' users before a new one came). */
  removalsSettled?: () => Promise<void>
}

/** What the image side needs from the container side (delete conflict rules, Containers counts). */
export interface ContainerUsage {
  /** Containers created from this image ID: their IDs and whether each is running. */
  containersUsingImage (imageId: string): Array<{ id: string, running: boolean }>
}
