// Hub API wire shapes (snake_case, as Docker's Hub reference spells them), made from the store's records in one
// place. Nothing else in the registry writes these keys.
import { isImageConfigType } from '../image/media-types.js'
import type { ManifestRecord, Repository, TagRecord, ImageSummary } from './storage/registry-store.js'

const ACTIVE_MS = 30 * 24 * 3600 * 1000

/** ISO 8601 with microseconds, as the Hub writes times: 2021-01-05T21:06:53.506400Z. */
export function hubTime (iso: string | null | undefined): string | null {
  if (iso === null || iso === undefined) return null
  return iso.replace(/\.(\d{3})Z$/, '.$1000Z')
}

function status (...times: Array<string | null | undefined>): 'active' | 'inactive' {
  const cutoff = Date.now() - ACTIVE_MS
  return times.some((t) => t !== null && t !== undefined && Date.parse(t) >= cutoff) ? 'active' : 'inactive'
}

export interface Permissions { read: boolean, write: boolean, admin: boolean }

function mediaTypes (repo: Repository): string[] {
  return [...new Set([...repo.manifests.values()].map((m) => m.mediaType))].sort()
}

function contentTypes (repo: Repository): string[] {
  const out = new Set<string>()
  for (const m of repo.manifests.values()) {
    out.add(m.artifactType === undefined || isImageConfigType(m.artifactType) ? 'image' : 'artifact')
  }
  return [...out].sort()
}

/** What a list entry and a repository's page open with: its names, type, status, description and privacy. */
function repositoryHead (repo: Repository): Record<string, unknown> {
  const m = repo.meta
  return {
    name: m.repository,
    namespace: m.namespace,
    repository_type: 'image',
    status: 1,
    status_description: 'active',
    description: m.description,
    is_private: m.isPrivate
  }
}

/** Pulls and the times a list entry and a repository's page both carry, in that order. */
function repositoryCounts (repo: Repository): Record<string, unknown> {
  const m = repo.meta
  return {
    pull_count: repo.stats.pullCount,
    last_updated: hubTime(repo.lastUpdated),
    last_modified: hubTime(m.lastModified),
    date_registered: hubTime(m.dateRegistered)
  }
}

export function toRepositoryListEntry (repo: Repository): Record<string, unknown> {
  return {
    ...repositoryHead(repo),
    star_count: 0,
    ...repositoryCounts(repo),
    affiliation: '',
    media_types: mediaTypes(repo),
    content_types: contentTypes(repo),
    categories: [],
    storage_size: repo.storageSize
  }
}

export function toRepositoryInfo (repo: Repository, permissions: Permissions): Record<string, unknown> {
  const m = repo.meta
  return {
    user: m.namespace,
    ...repositoryHead(repo),
    is_automated: false,
    star_count: 0,
    ...repositoryCounts(repo),
    collaborator_count: 0,
    affiliation: null,
    hub_user: m.namespace,
    has_starred: false,
    full_description: m.fullDescription,
    permissions,
    media_types: mediaTypes(repo),
    content_types: contentTypes(repo),
    categories: [],
    immutable_tags_settings: { enabled: false, rules: [] },
    storage_size: repo.storageSize,
    source: null
  }
}

function toImage (repo: Repository, rec: ManifestRecord, summary: ImageSummary | undefined, platform?: { architecture: string, os: string, variant?: string }): Record<string, unknown> {
  const lastPulled = repo.stats.manifests[rec.digest.slice(7)] ?? null
  return {
    architecture: summary?.architecture ?? platform?.architecture ?? null,
    features: (summary?.features ?? []).join(','),
    variant: summary?.variant ?? platform?.variant ?? null,
    digest: rec.digest,
    layers: (summary?.layers ?? []).map((l) => ({ digest: l.digest, size: l.size, instruction: l.instruction })),
    os: summary?.os ?? platform?.os ?? null,
    os_features: (summary?.osFeatures ?? []).join(','),
    os_version: summary?.osVersion ?? null,
    size: summary?.size ?? 0,
    status: status(rec.pushedAt, lastPulled),
    last_pulled: hubTime(lastPulled),
    last_pushed: hubTime(rec.pushedAt)
  }
}

/** The images of a tag: one for an image manifest, one per child manifest for an index. */
export function imagesOf (repo: Repository, rec: ManifestRecord): Array<Record<string, unknown>> {
  if (rec.kind === 'image') return [toImage(repo, rec, rec.image)]
  const out: Array<Record<string, unknown>> = []
  for (const c of rec.children ?? []) {
    const child = repo.manifests.get(c.digest)
    if (child !== undefined) out.push(toImage(repo, child, child.image, c.platform))
  }
  return out
}

export function toTag (repo: Repository, tag: TagRecord, userId: (name: string | null) => number): Record<string, unknown> {
  const rec = repo.manifests.get(tag.digest)
  const images = rec === undefined ? [] : imagesOf(repo, rec)
  const preferred = images.find((i) => i.architecture === 'amd64' && i.os === 'linux') ?? images[0]
  const lastPulled = repo.stats.tags[tag.name] ?? null
  return {
    id: tag.id,
    images,
    creator: userId(tag.pushedBy),
    last_updated: hubTime(tag.pushedAt),
    last_updater: userId(tag.pushedBy),
    last_updater_username: tag.pushedBy ?? '',
    name: tag.name,
    repository: repo.meta.id,
    full_size: (preferred?.size as number | undefined) ?? 0,
    v2: true,
    status: status(tag.pushedAt, lastPulled),
    tag_last_pulled: hubTime(lastPulled),
    tag_last_pushed: hubTime(tag.pushedAt),
    media_type: rec?.mediaType ?? null,
    content_type: rec === undefined || rec.artifactType === undefined || isImageConfigType(rec.artifactType) ? 'image' : 'artifact',
    digest: tag.digest
  }
}
