// Secrets and configs: records (create with base64 data, labels-only updates, removal refused while a service uses
// them) and the files a task gets: written on a tmpfs, never under the container's directory, with uid/gid/mode.
import { execFile } from 'node:child_process'
import { chown, chmod, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { join, isAbsolute } from 'node:path'
import { promisify } from 'node:util'
import { conflict, invalidArgument, notFound } from '../errors.js'
import { logger } from '../log.js'
import { swarmId } from './ids.js'
import type { Obj, SecretRecord, SwarmState, TaskRecord } from './model.js'
import type { SwarmStore } from './store.js'
import type { SwarmKeys } from './swarm-keys.js'
import type { TaskFile } from './task-container-spec.js'

const log = logger('swarm:secrets')
const run = promisify(execFile)
const SECRET_NAME = /^[a-zA-Z0-9]+(?:[a-zA-Z0-9-_.]*[a-zA-Z0-9])?$/
const MAX_SIZE = 500 * 1024

export type SecretKind = 'secret' | 'config'

const rpc = (code: string, msg: string): string => `rpc error: code = ${code} desc = ${msg}`

function table (st: SwarmState, kind: SecretKind): Record<string, SecretRecord> {
  return kind === 'secret' ? st.secrets : st.configs
}

export function findSecret (st: SwarmState, kind: SecretKind, ref: string): SecretRecord | undefined {
  const t = table(st, kind)
  if (t[ref] !== undefined) return t[ref]
  const all = Object.values(t)
  return all.find((s) => s.Spec.Name === ref) ?? (ref.length > 0 ? (() => { const m = all.filter((s) => s.ID.startsWith(ref)); return m.length === 1 ? m[0] : undefined })() : undefined)
}

export function getSecret (st: SwarmState, kind: SecretKind, ref: string): SecretRecord {
  const s = findSecret(st, kind, ref)
  if (s === undefined) throw notFound(`${kind} ${ref} not found`)
  return s
}

/** A secret's or config's data, opened with the swarm's data key. */
export function secretData (keys: SwarmKeys, s: SecretRecord): Buffer {
  if (s.sealed !== undefined) return keys.open(s.sealed)
  return Buffer.from(s.Spec.Data ?? '', 'base64')
}

/** Seals the data of records written before sealing existed (plain base64 in Spec.Data); true when any changed. */
export function sealLegacyData (st: SwarmState, keys: SwarmKeys): boolean {
  let changed = false
  for (const s of [...Object.values(st.secrets), ...Object.values(st.configs)]) {
    if (s.sealed !== undefined || s.Spec.Data === undefined) continue
    s.sealed = keys.seal(Buffer.from(s.Spec.Data, 'base64'))
    delete s.Spec.Data
    changed = true
  }
  return changed
}

export function createSecret (store: SwarmStore, keys: SwarmKeys, kind: SecretKind, body: Obj): string {
  const name = body.Name
  if (typeof name !== 'string' || name === '' || name.length > 64 || !SECRET_NAME.test(name)) {
    throw invalidArgument(rpc('InvalidArgument', `invalid name, only 64 [a-zA-Z0-9-_.] characters allowed, and the start and end character must be [a-zA-Z0-9]`))
  }
  if (body.Data !== undefined && body.Data !== null && typeof body.Data !== 'string') throw invalidArgument(`json: cannot unmarshal ${typeof body.Data} into Go struct field ${kind === 'secret' ? 'SecretSpec' : 'ConfigSpec'}.Data of type []uint8`)
  if (body.Labels !== undefined && body.Labels !== null && (typeof body.Labels !== 'object' || Array.isArray(body.Labels))) throw invalidArgument(`json: cannot unmarshal ${typeof body.Labels} into Go struct field Annotations.Labels of type map[string]string`)
  const data = typeof body.Data === 'string' ? Buffer.from(body.Data, 'base64') : Buffer.alloc(0)
  if (body.Driver === undefined || body.Driver === null) {
    if ((kind === 'secret' && data.length === 0) || data.length > MAX_SIZE) {
      throw invalidArgument(rpc('InvalidArgument', `${kind} data must be larger than 0 and less than ${MAX_SIZE} bytes`))
    }
  } else throw invalidArgument(rpc('InvalidArgument', `${kind} drivers are not supported by Berth`))
  if (Object.values(table(store.state, kind)).some((s) => s.Spec.Name === name)) throw conflict(rpc('AlreadyExists', `${kind} ${name} already exists`))
  const id = swarmId()
  const labels = (body.Labels !== null && typeof body.Labels === 'object' ? body.Labels : {}) as Record<string, string>
  table(store.state, kind)[id] = {
    ...store.newMeta(id),
    Spec: { Name: name, Labels: labels, ...(body.Templating !== undefined && body.Templating !== null ? { Templating: body.Templating as Obj } : {}) },
    sealed: keys.seal(data)
  }
  return id
}

export function updateSecret (store: SwarmStore, keys: SwarmKeys, kind: SecretKind, ref: string, version: number, body: Obj): SecretRecord {
  const s = getSecret(store.state, kind, ref)
  if (version !== s.Version.Index) throw conflict(rpc('Unknown', 'update out of sequence'))
  if ((body.Name !== undefined && body.Name !== s.Spec.Name) || (typeof body.Data === 'string' && body.Data !== '' && !Buffer.from(body.Data, 'base64').equals(secretData(keys, s)))) {
    throw invalidArgument(rpc('InvalidArgument', 'only updates to Labels are allowed'))
  }
  s.Spec.Labels = (body.Labels !== null && typeof body.Labels === 'object' ? body.Labels : {}) as Record<string, string>
  store.touch(s)
  return s
}

/** Services using a secret or config, by name. */
export function usersOf (st: SwarmState, kind: SecretKind, s: SecretRecord): string[] {
  const key = kind === 'secret' ? 'Secrets' : 'Configs'
  const idKey = kind === 'secret' ? 'SecretID' : 'ConfigID'
  return Object.values(st.services).filter((svc) => {
    const refs = ((((svc.Spec.TaskTemplate as Obj | undefined)?.ContainerSpec as Obj | undefined)?.[key] ?? []) as Obj[])
    return refs.some((r) => r[idKey] === s.ID)
  }).map((svc) => svc.Spec.Name as string).sort()
}

export function removeSecret (store: SwarmStore, kind: SecretKind, ref: string): SecretRecord {
  const s = getSecret(store.state, kind, ref)
  const users = usersOf(store.state, kind, s)
  if (users.length > 0) {
    throw invalidArgument(rpc('InvalidArgument', `${kind} '${s.Spec.Name}' is in use by the following service${users.length > 1 ? 's' : ''}: ${users.join(', ')}`))
  }
  delete table(store.state, kind)[s.ID]
  store.markDirty()
  return s
}

/** Resolves the secret/config references of a ContainerSpec to IDs (names accepted); unknown ones are refused. */
export function resolveRefs (st: SwarmState, cs: Obj): void {
  for (const kind of ['secret', 'config'] as const) {
    const key = kind === 'secret' ? 'Secrets' : 'Configs'
    const refs = cs[key]
    if (refs === undefined || refs === null) continue
    if (!Array.isArray(refs)) throw invalidArgument(`json: cannot unmarshal into Go struct field ContainerSpec.${key}`)
    for (const r of refs as Obj[]) {
      const ref = (r[kind === 'secret' ? 'SecretID' : 'ConfigID'] ?? r[kind === 'secret' ? 'SecretName' : 'ConfigName']) as string | undefined
      const s = ref === undefined ? undefined : findSecret(st, kind, ref)
      if (s === undefined) throw invalidArgument(rpc('InvalidArgument', `${kind} not found: ${String(ref)}`))
      r[kind === 'secret' ? 'SecretID' : 'ConfigID'] = s.ID
      r[kind === 'secret' ? 'SecretName' : 'ConfigName'] ??= s.Spec.Name
      if (kind === 'config' && r.Runtime !== undefined) continue
      const f = (r.File ?? {}) as Obj
      r.File = { Name: f.Name ?? s.Spec.Name, UID: f.UID ?? '0', GID: f.GID ?? '0', Mode: f.Mode ?? 0o444 }
    }
  }
}

/** The tmpfs that holds task files: mounted on first use; a plain directory where mounting is not possible. */
export class TaskFiles {
  private readonly root: string
  private ready: Promise<void> | null = null
  constructor (execRoot: string) { this.root = join(execRoot, 'swarm-files') }

  private async mount (): Promise<void> {
    await mkdir(this.root, { recursive: true, mode: 0o700 })
    const mounts = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '')
    if (mounts.split('\n').some((l) => l.split(' ')[4] === this.root)) return
    await run('mount', ['-t', 'tmpfs', '-o', 'nodev,nosuid,noexec,mode=0700,size=64m', 'tmpfs', this.root]).catch((err: Error) => { log('no tmpfs for task files (%s): a plain directory', err.message) })
  }

  async write (st: SwarmState, keys: SwarmKeys, t: TaskRecord): Promise<TaskFile[]> {
    this.ready ??= this.mount()
    await this.ready
    const cs = (t.Spec.ContainerSpec ?? {}) as Obj
    const out: TaskFile[] = []
    const dir = join(this.root, t.ID)
    let n = 0
    for (const kind of ['secret', 'config'] as const) {
      for (const r of ((cs[kind === 'secret' ? 'Secrets' : 'Configs'] ?? []) as Obj[])) {
        const s = findSecret(st, kind, r[kind === 'secret' ? 'SecretID' : 'ConfigID'] as string)
        if (s === undefined) throw new Error(`${kind} not found: ${String(r[kind === 'secret' ? 'SecretID' : 'ConfigID'])}`)
        const f = (r.File ?? {}) as Obj
        if (f.Name === undefined) continue // a config for the runtime (credential spec): nothing to mount
        const name = f.Name as string
        const target = isAbsolute(name) ? name : kind === 'secret' ? `/run/secrets/${name}` : `/${name}`
        await mkdir(dir, { recursive: true, mode: 0o700 })
        const file = join(dir, `${kind}-${n++}`)
        await writeFile(file, secretData(keys, s), { mode: 0o600 })
        await chown(file, Number(f.UID ?? 0), Number(f.GID ?? 0)).catch(() => {})
        await chmod(file, typeof f.Mode === 'number' ? f.Mode : 0o444)
        out.push({ source: file, target })
      }
    }
    return out
  }

  async remove (taskId: string): Promise<void> {
    await rm(join(this.root, taskId), { recursive: true, force: true })
  }

  /**
   * Unmounts the tmpfs and removes its directory: for when no task that may run is left (after a swarm leave, at a
   * stop with no task running, at a start outside a swarm). The next write mounts it again.
   */
  async release (): Promise<void> {
    const pending = this.ready
    this.ready = null
    await pending?.catch(() => {})
    // no directory, nothing mounted (the usual case at a start outside a swarm: one stat)
    if (await stat(this.root).then(() => false, () => true)) return
    const mounts = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '')
    if (mounts.split('\n').some((l) => l.split(' ')[4] === this.root)) {
      try {
        await run('umount', [this.root])
      } catch (err) {
        log('task files stay mounted at %s: %s', this.root, (err as Error).message)
        return
      }
    }
    await rm(this.root, { recursive: true, force: true }).catch((err: Error) => { log('removing %s: %s', this.root, err.message) })
  }
}
