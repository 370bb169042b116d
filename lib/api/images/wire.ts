// The Engine API's image shapes, per API version, from internal records.
import type { ImageRecord } from '../../image/types.js'
import type { DeleteRecord } from '../../image/image-service.js'
import type { ImageHistoryEntry, SearchResult } from './backend.js'
import { versionAtLeast } from '../api-version.js'
import { ZERO_TIME } from '../../util/time.js'

function createdSeconds (img: ImageRecord): number {
  const t = img.config.created
  if (t === undefined) return 0
  const ms = Date.parse(t)
  return Number.isNaN(ms) ? 0 : Math.floor(ms / 1000)
}

export function toImageSummary (img: ImageRecord, version: string, containers: number): Record<string, unknown> {
  const out: Record<string, unknown> = {
    Containers: versionAtLeast(version, '1.51') ? containers : -1,
    Created: createdSeconds(img),
    Id: img.id,
    Labels: img.config.config?.Labels ?? null,
    ParentId: img.parent,
    RepoDigests: img.repoDigests,
    RepoTags: img.repoTags,
    SharedSize: -1,
    Size: img.size
  }
  if (!versionAtLeast(version, '1.43')) {
    if (img.repoTags.length === 0) out.RepoTags = ['<none>:<none>']
    if (img.repoDigests.length === 0) out.RepoDigests = ['<none>@<none>']
  }
  if (!versionAtLeast(version, '1.44')) out.VirtualSize = img.size
  return out
}

/** The overlay2 GraphDriver section of an image inspect, from its layers' directories (lowest first). */
function graphDriverOf (img: ImageRecord, layerDirs: string[]): { Name: string, Data: Record<string, string> | null } {
  if (img.config.rootfs.diff_ids.length === 0) return { Name: 'overlay2', Data: null }
  return { Name: 'overlay2', Data: { LowerDir: layerDirs.slice(0, -1).reverse().join(':'), UpperDir: layerDirs[layerDirs.length - 1] ?? '', MergedDir: '', WorkDir: '' } }
}

export function toImageInspect (img: ImageRecord, version: string, layerDirs: string[]): Record<string, unknown> {
  const c = img.config.config ?? {}
  const config: Record<string, unknown> = {
    User: c.User ?? '',
    ExposedPorts: c.ExposedPorts ?? null,
    Env: c.Env ?? null,
    Cmd: c.Cmd ?? null,
    Volumes: c.Volumes ?? null,
    WorkingDir: c.WorkingDir ?? '',
    Entrypoint: c.Entrypoint ?? null,
    OnBuild: c.OnBuild ?? null,
    Labels: c.Labels ?? null
  }
  if (c.StopSignal !== undefined) config.StopSignal = c.StopSignal
  if (c.Shell !== undefined) config.Shell = c.Shell
  if (c.Healthcheck !== undefined) config.Healthcheck = c.Healthcheck
  if (c.ArgsEscaped !== undefined) config.ArgsEscaped = c.ArgsEscaped
  if (!versionAtLeast(version, '1.50')) {
    Object.assign(config, { Hostname: '', Domainname: '', AttachStdin: false, AttachStdout: false, AttachStderr: false, Tty: false, OpenStdin: false, StdinOnce: false, Image: '' })
  }
  const out: Record<string, unknown> = {
    Id: img.id,
    RepoTags: img.repoTags,
    RepoDigests: img.repoDigests,
    Parent: img.parent,
    Comment: img.config.comment ?? '',
    ...(img.config.created !== undefined ? { Created: img.config.created } : {}),
    DockerVersion: img.config.docker_version ?? '',
    Author: img.config.author ?? '',
    Config: config,
    Architecture: img.config.architecture,
    ...(img.config.variant !== undefined ? { Variant: img.config.variant } : {}),
    Os: img.config.os,
    Size: img.size,
    GraphDriver: graphDriverOf(img, layerDirs),
    RootFS: { Type: 'layers', Layers: img.config.rootfs.diff_ids },
    Metadata: { LastTagTime: img.lastTagTime ?? ZERO_TIME }
  }
  if (!versionAtLeast(version, '1.44')) out.VirtualSize = img.size
  if (!versionAtLeast(version, '1.45')) out.Container = ''
  // kept at every version (dockerd drops it at 1.45): docker-compose 1.29, Debian 12's, reads ContainerConfig.Volumes
  // on every recreate and fails with KeyError without it. A built image's step command (`/bin/sh -c #(nop) …`) as
  // dockerd shows it; otherwise the config, in the full container.Config shape
  const cc = img.config.container_config
  const full = versionAtLeast(version, '1.50') ? { Hostname: '', Domainname: '', AttachStdin: false, AttachStdout: false, AttachStderr: false, Tty: false, OpenStdin: false, StdinOnce: false, Image: '', ...config } : config
  out.ContainerConfig = cc !== undefined ? { ...full, Cmd: cc.Cmd ?? null } : full
  return out
}

export function toHistoryEntry (e: ImageHistoryEntry): Record<string, unknown> {
  return { Id: e.id, Created: e.created, CreatedBy: e.createdBy, Tags: e.tags, Size: e.size, Comment: e.comment }
}

export function toPruneReply (r: { deleted: DeleteRecord[], reclaimed: number }): { ImagesDeleted: DeleteRecord[] | null, SpaceReclaimed: number } {
  return { ImagesDeleted: r.deleted.length === 0 ? null : r.deleted, SpaceReclaimed: r.reclaimed }
}

/** A search result as the index and dockerd spell it. */
export function toSearchResult (r: SearchResult): Record<string, unknown> {
  return { name: r.name, description: r.description, star_count: r.stars, is_official: r.official, is_automated: r.automated }
}
