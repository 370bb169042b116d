// Builds OCI image layouts from a rootfs tar with node:crypto and node:zlib, for real-client tests (skopeo) and the
// benchmark: index.json, oci-layout, blobs/sha256/<hex>.
import { createHash } from 'node:crypto'
import { mkdirSync, writeFileSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'

export interface LayoutImage {
  manifestDigest: string
  configDigest: string
  layerDigests: string[]
}

function sha (b: Buffer): string { return `sha256:${createHash('sha256').update(b).digest('hex')}` }

function putBlob (dir: string, data: Buffer): { digest: string, size: number } {
  const digest = sha(data)
  writeFileSync(join(dir, 'blobs', 'sha256', digest.slice(7)), data)
  return { digest, size: data.length }
}

/** Writes an OCI layout holding one image per platform (all with the same layers) under `tag`. */
export function writeOciLayout (dir: string, layerTars: Buffer[], opts: { tag?: string, platforms?: Array<{ architecture: string, os: string }>, gzipLevel?: number } = {}): { index: LayoutImage[], topDigest: string } {
  mkdirSync(join(dir, 'blobs', 'sha256'), { recursive: true })
  writeFileSync(join(dir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }))
  const layers = layerTars.map((tar) => ({ gz: gzipSync(tar, { level: opts.gzipLevel ?? 6 }), diffId: sha(tar) }))
  const layerDescs = layers.map((l) => ({ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', ...putBlob(dir, l.gz) }))
  const platforms = opts.platforms ?? [{ architecture: 'amd64', os: 'linux' }]
  const images: LayoutImage[] = []
  const manifests: Array<{ mediaType: string, digest: string, size: number, platform: { architecture: string, os: string } }> = []
  for (const p of platforms) {
    const config = Buffer.from(JSON.stringify({
      architecture: p.architecture,
      os: p.os,
      created: '2026-01-01T00:00:00Z',
      config: { Cmd: ['sh'], Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'] },
      rootfs: { type: 'layers', diff_ids: layers.map((l) => l.diffId) },
      history: layers.map((_, i) => ({ created: '2026-01-01T00:00:00Z', created_by: `/bin/sh -c #(nop) ADD file:layer${i} in / ` }))
    }))
    const c = putBlob(dir, config)
    const manifest = Buffer.from(JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...c },
      layers: layerDescs
    }))
    const m = putBlob(dir, manifest)
    manifests.push({ mediaType: 'application/vnd.oci.image.manifest.v1+json', ...m, platform: p })
    images.push({ manifestDigest: m.digest, configDigest: c.digest, layerDigests: layerDescs.map((l) => l.digest) })
  }
  let top: { mediaType: string, digest: string, size: number }
  if (manifests.length === 1) {
    top = manifests[0] as typeof top
  } else {
    const idx = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests }))
    top = { mediaType: 'application/vnd.oci.image.index.v1+json', ...putBlob(dir, idx) }
  }
  writeFileSync(join(dir, 'index.json'), JSON.stringify({
    schemaVersion: 2,
    manifests: [{ ...top, annotations: { 'org.opencontainers.image.ref.name': opts.tag ?? 'latest' } }]
  }))
  return { index: images, topDigest: top.digest }
}

/** The top manifest digest an OCI layout's index.json names for a tag. */
export function layoutDigest (dir: string, tag = 'latest'): string {
  const idx = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8')) as { manifests: Array<{ digest: string, annotations?: Record<string, string> }> }
  const m = idx.manifests.find((x) => x.annotations?.['org.opencontainers.image.ref.name'] === tag) ?? idx.manifests[0]
  if (m === undefined) throw new Error('empty index')
  return m.digest
}
