// Registry test helpers: a registry on 127.0.0.1:0 in a temp data root (closed and removed in t.after), literal
// HTTP requests (no URL normalisation, so `..` reaches the server as sent), and image builders.
import http from 'node:http'
import { before, after } from 'node:test'
import { rmSync, readdirSync, type Dirent } from 'node:fs'
import { join } from 'node:path'
import { createHash, randomBytes } from 'node:crypto'
import { createRegistry, type Registry, type RegistryOptions } from '../../lib/index.js'
import { tmpDir as engineTmpDir } from '../helpers/engine.js'

export interface TestContextLike { after: (fn: () => Promise<void> | void) => void }

export interface TestRegistry {
  registry: Registry
  url: string
  host: string
  port: number
  /** The temp dir; the data root is <dir>/data. */
  dir: string
  dataRoot: string
}

export function tmpDir (prefix = 'berth-reg-'): string { return engineTmpDir(prefix) }

export async function startRegistry (t: TestContextLike, opts: Partial<RegistryOptions> & { dir?: string } = {}): Promise<TestRegistry> {
  const dir = opts.dir ?? tmpDir()
  const dataRoot = opts.dataRoot ?? join(dir, 'data')
  const registry = await createRegistry({ listen: '127.0.0.1:0', ...opts, dataRoot })
  const a = registry.addresses[0]
  if (a === undefined || a.kind !== 'tcp') throw new Error('no tcp address')
  t.after(async () => {
    await registry.close()
    if (opts.dir === undefined) rmSync(dir, { recursive: true, force: true })
  })
  return { registry, url: registry.url, host: a.host, port: a.port, dir, dataRoot }
}

export interface Reply {
  status: number
  headers: http.IncomingHttpHeaders
  body: Buffer
  text: string
  json: () => any
}

export interface RequestOptions {
  headers?: Record<string, string | number>
  body?: Buffer | string
  json?: unknown
  token?: string
}

/** One HTTP request with the path sent exactly as given. */
export async function request (base: string, method: string, path: string, opts: RequestOptions = {}): Promise<Reply> {
  const u = new URL(base)
  const headers: Record<string, string | number> = { ...opts.headers }
  let payload: Buffer | undefined
  if (opts.json !== undefined) {
    payload = Buffer.from(JSON.stringify(opts.json))
    headers['Content-Type'] ??= 'application/json'
  } else if (opts.body !== undefined) {
    payload = Buffer.from(opts.body)
  }
  if (payload !== undefined) headers['Content-Length'] = payload.length
  if (opts.token !== undefined) headers.Authorization = `Bearer ${opts.token}`
  return await new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (d: Buffer) => chunks.push(d))
      res.on('end', () => {
        const body = Buffer.concat(chunks)
        const text = body.toString('utf8')
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text, json: () => JSON.parse(text) })
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(payload)
  })
}

/** A client bound to one registry (and optionally a token). */
export function client (base: string, token?: string): (method: string, path: string, opts?: RequestOptions) => Promise<Reply> {
  return async (method, path, opts = {}) => await request(base, method, path, token === undefined ? opts : { token, ...opts })
}

export function sha256 (data: Buffer | string): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`
}

export const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json'
export const OCI_INDEX = 'application/vnd.oci.image.index.v1+json'
export const OCI_CONFIG = 'application/vnd.oci.image.config.v1+json'
export const OCI_LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip'
export const DOCKER_MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json'
export const DOCKER_LIST = 'application/vnd.docker.distribution.manifest.list.v2+json'
export const DOCKER_CONFIG = 'application/vnd.docker.container.image.v1+json'
export const DOCKER_LAYER = 'application/vnd.docker.image.rootfs.diff.tar.gzip'

export interface TestImage {
  config: Buffer
  layers: Buffer[]
  manifest: Buffer
  digest: string
}

/** A small image: random layers, a config naming the platform, a manifest (OCI by default). */
export function makeImage (opts: { layers?: number, arch?: string, os?: string, docker?: boolean, layerSize?: number, subject?: { digest: string, size: number, mediaType: string }, artifactType?: string, annotations?: Record<string, string> } = {}): TestImage {
  const layers = Array.from({ length: opts.layers ?? 2 }, () => randomBytes(opts.layerSize ?? 1024))
  const config = Buffer.from(JSON.stringify({
    architecture: opts.arch ?? 'amd64',
    os: opts.os ?? 'linux',
    rootfs: { type: 'layers', diff_ids: layers.map((l) => sha256(l)) },
    history: layers.map((_, i) => ({ created_by: `/bin/sh -c echo layer ${i}` }))
  }))
  const docker = opts.docker === true
  const m: Record<string, unknown> = {
    schemaVersion: 2,
    mediaType: docker ? DOCKER_MANIFEST : OCI_MANIFEST,
    config: { mediaType: docker ? DOCKER_CONFIG : OCI_CONFIG, digest: sha256(config), size: config.length },
    layers: layers.map((l) => ({ mediaType: docker ? DOCKER_LAYER : OCI_LAYER, digest: sha256(l), size: l.length }))
  }
  if (opts.subject !== undefined) m.subject = opts.subject
  if (opts.artifactType !== undefined) m.artifactType = opts.artifactType
  if (opts.annotations !== undefined) m.annotations = opts.annotations
  const manifest = Buffer.from(JSON.stringify(m))
  return { config, layers, manifest, digest: sha256(manifest) }
}

/** Monolithic blob upload (POST ?digest=). */
export async function pushBlob (base: string, name: string, data: Buffer, token?: string): Promise<Reply> {
  return await request(base, 'POST', `/v2/${name}/blobs/uploads/?digest=${sha256(data)}`, {
    body: data, headers: { 'Content-Type': 'application/octet-stream' }, ...(token !== undefined ? { token } : {})
  })
}

/** Pushes an image's blobs and manifest under a reference; returns the manifest PUT reply. */
export async function pushImage (base: string, name: string, ref: string, img: TestImage, token?: string): Promise<Reply> {
  for (const b of [img.config, ...img.layers]) {
    const r = await pushBlob(base, name, b, token)
    if (r.status !== 201) throw new Error(`blob push failed: ${r.status} ${r.text}`)
  }
  const type = (JSON.parse(img.manifest.toString()) as { mediaType: string }).mediaType
  return await request(base, 'PUT', `/v2/${name}/manifests/${ref}`, {
    body: img.manifest, headers: { 'Content-Type': type }, ...(token !== undefined ? { token } : {})
  })
}

/** An index over already pushed manifests. */
export function makeIndex (children: Array<{ img: TestImage, arch: string }>, mediaType = OCI_INDEX): { body: Buffer, digest: string } {
  const childType = mediaType === OCI_INDEX ? OCI_MANIFEST : DOCKER_MANIFEST
  const body = Buffer.from(JSON.stringify({
    schemaVersion: 2,
    mediaType,
    manifests: children.map((c) => ({ mediaType: childType, digest: c.img.digest, size: c.img.manifest.length, platform: { architecture: c.arch, os: 'linux' } }))
  }))
  return { body, digest: sha256(body) }
}

/** Every file under a directory (relative paths), for "nothing written outside" checks. */
export function listTree (dir: string): string[] {
  const out: string[] = []
  const walk = (d: string, rel: string): void => {
    let entries: Dirent[]
    try { entries = readdirSync(d, { withFileTypes: true }) } catch { return }
    for (const e of entries) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`
      if (e.isDirectory()) walk(join(d, e.name), r)
      else out.push(r)
    }
  }
  walk(dir, '')
  return out.sort()
}

/**
 * A registry for a describe() block: started in its before hook, closed in its after hook. Call in the describe body
 * before the block's own hooks; read `.current` inside tests and later hooks.
 */
export function useRegistry (opts: Partial<RegistryOptions> = {}): { current: TestRegistry } {
  const holder = { current: undefined as unknown as TestRegistry }
  const cleanups: Array<() => Promise<void> | void> = []
  before(async () => { holder.current = await startRegistry({ after: (fn) => { cleanups.push(fn) } }, opts) })
  after(async () => { for (const fn of cleanups.reverse()) await fn() })
  return holder
}
