// The manifest codec as a client reads what a registry serves: lenient decoding, failures in the engine's error
// kinds (a malformed document is the registry's fault; a format this engine does not read is the caller's).
import { internal, invalidArgument } from '../errors.js'
import { decodeManifest, isManifestError, type Manifest } from '../image/manifest.js'

export function parseManifest (bytes: Buffer, contentType: string): Manifest {
  try {
    return decodeManifest(bytes, contentType, { strict: false })
  } catch (err) {
    if (!isManifestError(err)) throw err
    switch (err.fault) {
      case 'schema1':
        throw invalidArgument('unsupported manifest format: Docker Image manifest version 2, schema 1 is no longer supported; push the image again with a current client')
      case 'unsupported-type':
        throw invalidArgument(`unsupported manifest media type ${JSON.stringify(err.detail.mediaType)}`)
      case 'unsupported-digest':
        throw invalidArgument(err.message)
      default:
        throw internal(`invalid manifest: ${err.message}`)
    }
  }
}
