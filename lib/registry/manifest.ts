// The manifest codec as the registry checks a push: strict decoding, every failure MANIFEST_INVALID.
import { decodeManifest, isManifestError, type Manifest } from '../image/manifest.js'
import { registryError } from './codes.js'

/** Parses and checks a manifest body; `contentType` is the request's Content-Type header. */
export function parseManifest (body: Buffer, contentType: string | undefined): Manifest {
  try {
    return decodeManifest(body, contentType, { strict: true })
  } catch (err) {
    if (!isManifestError(err)) throw err
    if (err.fault === 'schema1') {
      throw registryError('MANIFEST_INVALID', { message: 'manifest invalid: schema 1 manifests are not supported; push with schema 2 or OCI', detail: {} })
    }
    throw registryError('MANIFEST_INVALID', { message: `manifest invalid: ${err.message}`, detail: err.detail })
  }
}
