// Who may do what. In 'none' mode everyone may do everything. In 'token' mode:
//   - a user may pull, push and delete in the namespace named like them and in the namespaces the users file lists
//     for them ('*': all); anyone, anonymous included, may pull public repositories; nobody else gets anything on a
//     name that does not exist, so a missing repository and a private one answer alike (no existence leak);
//   - the token endpoint grants the intersection of what was asked and what is allowed (Docker's token spec); the
//     registry then trusts the token's `access` list alone; Hub access tokens (no `access` claim) are checked
//     against the rules above on every request.
import { randomUUID } from 'node:crypto'
import { unauthorized } from '../../errors.js'
import { parseRepoName, type RepoName } from '../names.js'
import type { RegistryStore } from '../storage/registry-store.js'
import { invalidToken, signJwt, verifyJwt, type JwtClaims } from './jwt.js'
import { LoginGuard, type LoginGuardOptions } from './login-guard.js'
import { hashPassword, verifyPassword, type UserEntry } from './passwords.js'
import { grants, type AccessEntry, type Action } from './scope.js'
import { isoTime } from '../../util/time.js'

export type AuthMode = 'none' | 'token'

export interface Identity {
  /** The user, or null when anonymous. */
  user: string | null
  /** Grants of a registry token; null when rights are decided by the rules (auth 'none', Hub access tokens). */
  grants: AccessEntry[] | null
  /** A valid token came with the request. */
  token: boolean
}

export const ANONYMOUS: Identity = Object.freeze({ user: null, grants: null, token: false })

export interface AuthorityOptions {
  mode: AuthMode
  users: UserEntry[]
  key: Buffer
  service: string
  issuer: string
  /** Token lifetime in seconds. */
  ttl: number
  /** Caps on password hashing and failed logins (login-guard.ts). */
  logins?: LoginGuardOptions
}

const ALL: ReadonlySet<Action> = new Set<Action>(['pull', 'push', 'delete'])
const PULL: ReadonlySet<Action> = new Set<Action>(['pull'])
const NONE: ReadonlySet<Action> = new Set<Action>()

export class Authority {
  readonly mode: AuthMode
  readonly service: string
  readonly issuer: string
  readonly ttl: number
  private readonly key: Buffer
  private readonly users: Map<string, UserEntry>
  private readonly store: RegistryStore
  private readonly guard: LoginGuard
  /** A hash of nothing anyone knows: unknown users are hashed against it, so they take as long as known ones. */
  private dummy: Promise<string> | undefined

  constructor (opts: AuthorityOptions, store: RegistryStore) {
    this.guard = new LoginGuard(opts.logins)
    this.mode = opts.mode
    this.service = opts.service
    this.issuer = opts.issuer
    this.ttl = opts.ttl
    this.key = opts.key
    this.users = new Map(opts.users.map((u) => [u.name, u]))
    this.store = store
  }

  /** A stable numeric id for the Hub's integer user fields: the user's line in the users file, 0 for nobody. */
  userId (name: string | null): number {
    if (name === null) return 0
    let i = 1
    for (const k of this.users.keys()) { if (k === name) return i; i++ }
    return 0
  }

  /**
   * The user whose password this is, or null; `client` is the caller's address for the failure throttle. Throws
   * TOOMANYREQUESTS (429) when hashing is saturated or the client or user failed too often (login-guard.ts).
   */
  async authenticate (name: string, password: string, client: string): Promise<UserEntry | null> {
    const u = this.users.get(name)
    const ok = await this.guard.check(client, name, async () => {
      if (u !== undefined) return await verifyPassword(password, u.hash)
      this.dummy ??= hashPassword(randomUUID())
      await verifyPassword(password, await this.dummy)
      return false
    })
    return ok ? (u ?? null) : null
  }

  canWriteNamespace (user: string | null, namespace: string): boolean {
    if (this.mode === 'none') return true
    if (user === null) return false
    if (user === namespace) return true
    const u = this.users.get(user)
    return u !== undefined && (u.namespaces.includes('*') || u.namespaces.includes(namespace))
  }

  /** What the rules allow a user on a repository. */
  allowedActions (user: string | null, rn: RepoName): ReadonlySet<Action> {
    if (this.canWriteNamespace(user, rn.namespace)) return ALL
    const repo = this.store.get(rn.name)
    return repo !== undefined && !repo.meta.isPrivate ? PULL : NONE
  }

  /** Whether an identity may do an action on a repository (token grants or the rules). */
  allows (id: Identity, rn: RepoName, action: Action): boolean {
    if (this.mode === 'none') return true
    if (id.grants !== null) return grants(id.grants, 'repository', rn.name, action)
    return this.allowedActions(id.user, rn).has(action)
  }

  /** Whether an identity may read a repository in listings (catalog, Hub lists). */
  canList (id: Identity, rn: RepoName): boolean {
    if (this.mode === 'none') return true
    return this.allowedActions(id.user, rn).has('pull')
  }

  /** Intersects requested scopes with what the user may do; names are canonicalised. */
  grant (user: string | null, requested: AccessEntry[]): AccessEntry[] {
    const out: AccessEntry[] = []
    for (const r of requested) {
      if (r.type === 'registry' && r.name === 'catalog') {
        // listing is filtered per user at request time
        out.push({ type: 'registry', name: 'catalog', actions: ['*'] })
        continue
      }
      if (r.type !== 'repository') continue
      let rn: RepoName
      try { rn = parseRepoName(r.name) } catch { continue }
      const allowed = this.allowedActions(user, rn)
      const asked = r.actions.includes('*') ? [...ALL] : r.actions
      const actions = asked.filter((a) => allowed.has(a as Action))
      const prev = out.find((e) => e.type === 'repository' && e.name === rn.name)
      if (prev !== undefined) { for (const a of actions) if (!prev.actions.includes(a)) prev.actions.push(a) } else out.push({ type: 'repository', name: rn.name, actions })
    }
    return out
  }

  /** Signs a token; `access` undefined makes a Hub access token (rights checked per request). */
  issue (sub: string | null, access: AccessEntry[] | undefined): { token: string, expiresIn: number, issuedAt: string } {
    const iat = Math.floor(Date.now() / 1000)
    const claims: JwtClaims = { iss: this.issuer, sub: sub ?? '', aud: this.service, exp: iat + this.ttl, nbf: iat, iat, jti: randomUUID() }
    if (access !== undefined) claims.access = access
    return { token: signJwt(claims, this.key), expiresIn: this.ttl, issuedAt: isoTime(iat * 1000) }
  }

  /** The identity behind an Authorization header; anonymous without one; throws unauthorized for a bad token. */
  identify (header: string | undefined): Identity {
    if (this.mode === 'none' || header === undefined) return ANONYMOUS
    const m = /^(Bearer|JWT)\s+(\S+)\s*$/i.exec(header)
    if (m === null) {
      if (/^Basic\s/i.test(header)) return ANONYMOUS // Basic is for the token endpoint only
      throw unauthorized('invalid authorization header')
    }
    const claims = verifyJwt(m[2] as string, this.key, { iss: this.issuer, aud: this.service })
    const user = claims.sub === '' ? null : claims.sub
    if (user !== null && !this.users.has(user)) throw invalidToken('unknown user')
    let list: AccessEntry[] | null = null
    if (claims.access !== undefined) {
      if (!Array.isArray(claims.access)) throw invalidToken('malformed access claim')
      list = claims.access
    }
    return { user, grants: list, token: true }
  }
}
