// The manifest and layer media types of the Docker and OCI image formats. Pure constants and predicates.

export const MEDIA_OCI_INDEX = 'application/vnd.oci.image.index.v1+json'
export const MEDIA_DOCKER_LIST = 'application/vnd.docker.distribution.manifest.list.v2+json'
export const MEDIA_OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json'
export const MEDIA_DOCKER_MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json'
export const MEDIA_DOCKER_SCHEMA1 = 'application/vnd.docker.distribution.manifest.v1+json'
export const MEDIA_DOCKER_SCHEMA1_SIGNED = 'application/vnd.docker.distribution.manifest.v1+prettyjws'

export const MEDIA_DOCKER_CONFIG = 'application/vnd.docker.container.image.v1+json'
export const MEDIA_OCI_CONFIG = 'application/vnd.oci.image.config.v1+json'

export const MEDIA_DOCKER_LAYER_GZIP = 'application/vnd.docker.image.rootfs.diff.tar.gzip'
export const MEDIA_DOCKER_LAYER_TAR = 'application/vnd.docker.image.rootfs.diff.tar'
export const MEDIA_DOCKER_FOREIGN_LAYER = 'application/vnd.docker.image.rootfs.foreign.diff.tar.gzip'
export const MEDIA_OCI_LAYER_GZIP = 'application/vnd.oci.image.layer.v1.tar+gzip'
export const MEDIA_OCI_LAYER_TAR = 'application/vnd.oci.image.layer.v1.tar'
export const MEDIA_OCI_LAYER_ZSTD = 'application/vnd.oci.image.layer.v1.tar+zstd'
export const MEDIA_OCI_NONDIST_GZIP = 'application/vnd.oci.image.layer.nondistributable.v1.tar+gzip'
export const MEDIA_OCI_NONDIST_TAR = 'application/vnd.oci.image.layer.nondistributable.v1.tar'
export const MEDIA_OCI_NONDIST_ZSTD = 'application/vnd.oci.image.layer.nondistributable.v1.tar+zstd'

/** The Accept header of a manifest request: the four types this engine reads, indexes first. */
export const MANIFEST_ACCEPT = [MEDIA_OCI_INDEX, MEDIA_DOCKER_LIST, MEDIA_OCI_MANIFEST, MEDIA_DOCKER_MANIFEST].join(', ')

export function isIndexType (t: string): boolean {
  return t === MEDIA_OCI_INDEX || t === MEDIA_DOCKER_LIST
}

export function isImageManifestType (t: string): boolean {
  return t === MEDIA_OCI_MANIFEST || t === MEDIA_DOCKER_MANIFEST
}

export function isSchema1Type (t: string): boolean {
  return t === MEDIA_DOCKER_SCHEMA1 || t === MEDIA_DOCKER_SCHEMA1_SIGNED
}

export type LayerCompression = 'gzip' | 'none' | 'zstd'

/** How a layer blob is compressed, from its media type; undefined for types that are not layers. */
export function layerCompression (t: string): LayerCompression | undefined {
  switch (t) {
    case MEDIA_DOCKER_LAYER_GZIP: case MEDIA_OCI_LAYER_GZIP: case MEDIA_OCI_NONDIST_GZIP: case MEDIA_DOCKER_FOREIGN_LAYER:
      return 'gzip'
    case MEDIA_DOCKER_LAYER_TAR: case MEDIA_OCI_LAYER_TAR: case MEDIA_OCI_NONDIST_TAR:
      return 'none'
    case MEDIA_OCI_LAYER_ZSTD: case MEDIA_OCI_NONDIST_ZSTD:
      return 'zstd'
    default:
      return undefined
  }
}

/** Layer types whose bytes may live elsewhere (`urls`): Docker's foreign layers and OCI's non-distributable ones. */
export function isNonDistributableLayerType (t: string): boolean {
  return t === MEDIA_DOCKER_FOREIGN_LAYER || t === MEDIA_OCI_NONDIST_GZIP || t === MEDIA_OCI_NONDIST_TAR || t === MEDIA_OCI_NONDIST_ZSTD
}

/** The media type a layer gets in a Docker schema 2 manifest. */
export function dockerLayerType (compression: LayerCompression): string {
  return compression === 'gzip' ? MEDIA_DOCKER_LAYER_GZIP : compression === 'none' ? MEDIA_DOCKER_LAYER_TAR : MEDIA_OCI_LAYER_ZSTD
}

/** True for the media types of an image configuration (Docker's and OCI's). */
export function isImageConfigType (t: string): boolean {
  return t === MEDIA_OCI_CONFIG || t === MEDIA_DOCKER_CONFIG
}
