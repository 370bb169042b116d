// Secrets and configs: records (create with base64 data sealed at rest, labels-only updates, removal refused while a
// service uses them) and the /secrets and /configs resources. Request bodies are checked here as dockerd checks them.
import { conflict, invalidArgument, notFound } from '../errors.js'
import type { Filters } from '../http/query.js'
import { swarmId } from './ids.js'
import type { SecretRecord, SwarmState } from './model.js'
import type { SwarmStore } from './store.js'
import { labelsOf } from './labels.js'
import { activeSwarm, matchLabel, rpc, type SwarmContext } from './swarm-context.js'
import type { SwarmKeys } from './swarm-keys.js'
import { toSecret } from './wire.js'

type Obj = Record<string, unknown>

const SECRET_NAME = /^[a-zA-Z0-9]+(?:[a-zA-Z0-9-_.]*[a-zA-Z0-9])?$/
const MAX_SIZE = 500 * 1024

export type SecretKind = 'secret' | 'config'

function table (st: SwarmState, kind: SecretKind): Record<string, SecretRecord> {
  return kind === 'secret' ? st.secrets : st.configs
}

export function findSecret (st: SwarmState, kind: SecretKind, ref: string): SecretRecord | undefined {
  const t = table(st, kind)
  if (t[ref] !== undefined) return t[ref]
  const all = Object.values(t)
  return all.find((s) => s.spec.name === ref) ?? (ref.length > 0 ? (() => { const m = all.filter((s) => s.id.startsWith(ref)); return m.length === 1 ? m[0] : undefined })() : undefined)
}

export function getSecret (st: SwarmState, kind: SecretKind, ref: string): SecretRecord {
  const s = findSecret(st, kind, ref)
  if (s === undefined) throw notFound(`${kind} ${ref} not found`)
  return s
}

/** A secret's or config's data, opened with the swarm's data key. */
export function secretData (keys: SwarmKeys, s: SecretRecord): Buffer {
  if (s.sealed !== undefined) return keys.open(s.sealed)
  return Buffer.from(s.spec.data ?? '', 'base64')
}

/** Seals the data of records written before sealing existed (plain base64 in Spec.Data); true when any changed. */
export function sealLegacyData (st: SwarmState, keys: SwarmKeys): boolean {
  let changed = false
  for (const s of [...Object.values(st.secrets), ...Object.values(st.configs)]) {
    if (s.sealed !== undefined || s.spec.data === undefined) continue
    s.sealed = keys.seal(Buffer.from(s.spec.data, 'base64'))
    delete s.spec.data
    changed = true
  }
  return changed
}

/** The Go struct a secret's or config's body decodes into (named in dockerd's type errors). */
function specName (kind: SecretKind): string { return kind === 'secret' ? 'SecretSpec' : 'ConfigSpec' }

export function createSecret (store: SwarmStore, keys: SwarmKeys, kind: SecretKind, body: Obj): string {
  // the body's JSON types first, as dockerd decodes it before it checks anything
  if (body.Data !== undefined && body.Data !== null && typeof body.Data !== 'string') throw invalidArgument(`json: cannot unmarshal ${typeof body.Data} into Go struct field ${specName(kind)}.Data of type []uint8`)
  const labels = labelsOf(body.Labels, `${specName(kind)}.Labels`)
  const name = body.Name
  if (typeof name !== 'string' || name === '' || name.length > 64 || !SECRET_NAME.test(name)) {
    throw invalidArgument(rpc('InvalidArgument', `invalid name, only 64 [a-zA-Z0-9-_.] characters allowed, and the start and end character must be [a-zA-Z0-9]`))
  }
  const data = typeof body.Data === 'string' ? Buffer.from(body.Data, 'base64') : Buffer.alloc(0)
  if (body.Driver === undefined || body.Driver === null) {
    if ((kind === 'secret' && data.length === 0) || data.length > MAX_SIZE) {
      throw invalidArgument(rpc('InvalidArgument', `${kind} data must be larger than 0 and less than ${MAX_SIZE} bytes`))
    }
  } else throw invalidArgument(rpc('InvalidArgument', `${kind} drivers are not supported by Berth`))
  if (Object.values(table(store.state, kind)).some((s) => s.spec.name === name)) throw conflict(rpc('AlreadyExists', `${kind} ${name} already exists`))
  const id = swarmId()
  table(store.state, kind)[id] = {
    ...store.newMeta(id),
    spec: { name, labels, ...(body.Templating !== undefined && body.Templating !== null ? { templating: body.Templating as Obj } : {}) },
    sealed: keys.seal(data)
  }
  return id
}

export function updateSecret (store: SwarmStore, keys: SwarmKeys, kind: SecretKind, ref: string, version: number, body: Obj): SecretRecord {
  // the body is decoded first, as dockerd's JSON decoding comes before the lookup
  const labels = labelsOf(body.Labels, `${specName(kind)}.Labels`)
  const s = getSecret(store.state, kind, ref)
  if (version !== s.version) throw conflict(rpc('Unknown', 'update out of sequence'))
  if ((body.Name !== undefined && body.Name !== s.spec.name) || (typeof body.Data === 'string' && body.Data !== '' && !Buffer.from(body.Data, 'base64').equals(secretData(keys, s)))) {
    throw invalidArgument(rpc('InvalidArgument', 'only updates to Labels are allowed'))
  }
  s.spec.labels = labels
  store.touch(s)
  return s
}

/** Services using a secret or config, by name. */
export function usersOf (st: SwarmState, kind: SecretKind, s: SecretRecord): string[] {
  return Object.values(st.services).filter((svc) => {
    const cs = svc.spec.taskTemplate.containerSpec
    return (kind === 'secret' ? cs.secrets : cs.configs).some((r) => r.id === s.id)
  }).map((svc) => svc.spec.name).sort()
}

export function removeSecret (store: SwarmStore, kind: SecretKind, ref: string): SecretRecord {
  const s = getSecret(store.state, kind, ref)
  const users = usersOf(store.state, kind, s)
  if (users.length > 0) {
    throw invalidArgument(rpc('InvalidArgument', `${kind} '${s.spec.name}' is in use by the following service${users.length > 1 ? 's' : ''}: ${users.join(', ')}`))
  }
  delete table(store.state, kind)[s.id]
  store.markDirty()
  return s
}

/** The /secrets or the /configs resource (a config's data is shown, a secret's never leaves the daemon). */
export class Secrets {
  private readonly c: SwarmContext
  private readonly kind: SecretKind

  constructor (c: SwarmContext, kind: SecretKind) {
    this.c = c
    this.kind = kind
  }

  private shown (s: SecretRecord): Obj {
    return toSecret(s, this.kind === 'config' ? secretData(this.c.keys, s) : undefined)
  }

  list (f: Filters): Obj[] {
    activeSwarm(this.c)
    let list = Object.values(table(this.c.store.state, this.kind))
    for (const [k, values] of f) {
      if (values.length === 0) continue
      list = list.filter((s) => {
        switch (k) {
          case 'id': return values.some((v) => s.id.startsWith(v))
          case 'name': return values.some((v) => s.spec.name.startsWith(v))
          case 'names': return values.includes(s.spec.name)
          case 'label': return matchLabel(s.spec.labels, values)
          default: return true
        }
      })
    }
    return list.sort((a, b) => a.createdAt.localeCompare(b.createdAt)).map((s) => this.shown(s))
  }

  async create (body: Obj): Promise<string> {
    activeSwarm(this.c)
    const id = createSecret(this.c.store, this.c.keys, this.kind, body)
    await this.c.store.commit()
    this.c.events.emit(this.kind, 'create', id, { name: body.Name as string })
    return id
  }

  inspect (ref: string): Obj {
    activeSwarm(this.c)
    return this.shown(getSecret(this.c.store.state, this.kind, ref))
  }

  async update (ref: string, version: number | undefined, body: Obj): Promise<void> {
    activeSwarm(this.c)
    const s = updateSecret(this.c.store, this.c.keys, this.kind, ref, version ?? -1, body)
    await this.c.store.commit()
    this.c.events.emit(this.kind, 'update', s.id, { name: s.spec.name })
  }

  async remove (ref: string): Promise<void> {
    activeSwarm(this.c)
    const s = removeSecret(this.c.store, this.kind, ref)
    await this.c.store.commit()
    this.c.events.emit(this.kind, 'remove', s.id, { name: s.spec.name })
  }
}
