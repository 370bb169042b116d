// The swarm's keys: a data key (DEK) that seals secret and config data in the state file (AES-256-GCM), and, with
// autolock, an unlock key that wraps the DEK. The unlock key is never written: after a daemon restart the swarm is
// locked until `docker swarm unlock` hands it back (swarmkit's KEK/DEK scheme). Without autolock the DEK sits in
// keys.json (0600) beside the state, as swarmkit keeps its DEK in its key file's headers.
//
//   <data-root>/swarm/keys.json   {"dek": base64}                      autolock off
//                                 {"wrapped": "v1:iv:ciphertext:tag"}  autolock on: the DEK under the unlock key
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { conflict, invalidArgument, unauthorized } from '../errors.js'
import { writeFileAtomic } from '../util/atomic.js'

const PREFIX = 'SWMKEY-1-'
const KEY_BYTES = 32

/** An unlock key as dockerd prints it: `SWMKEY-1-` and the key in unpadded base64. */
export function humanReadableKey (key: Buffer): string {
  return PREFIX + key.toString('base64').replace(/=+$/, '')
}

/** The key bytes of `SWMKEY-1-…`; anything else is dockerd's "invalid key string" (400). */
export function parseHumanReadableKey (text: string): Buffer {
  const b64 = text.trim().startsWith(PREFIX) ? text.trim().slice(PREFIX.length) : null
  if (b64 === null || b64 === '' || !/^[A-Za-z0-9+/]+$/.test(b64)) throw invalidArgument('invalid key string')
  return Buffer.from(b64, 'base64')
}

/** AES-256-GCM: `v1:<iv>:<ciphertext>:<tag>`, base64 parts. */
function seal (key: Buffer, data: Buffer): string {
  const iv = randomBytes(12)
  const c = createCipheriv('aes-256-gcm', key, iv)
  const ct = Buffer.concat([c.update(data), c.final()])
  return ['v1', iv.toString('base64'), ct.toString('base64'), c.getAuthTag().toString('base64')].join(':')
}

/** The data sealed under key, or null when the key is not the one it was sealed with (or the text is damaged). */
function unseal (key: Buffer, text: string): Buffer | null {
  const [v, iv, ct, tag] = text.split(':')
  if (v !== 'v1' || iv === undefined || ct === undefined || tag === undefined || key.length !== KEY_BYTES) return null
  try {
    const d = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'))
    d.setAuthTag(Buffer.from(tag, 'base64'))
    return Buffer.concat([d.update(Buffer.from(ct, 'base64')), d.final()])
  } catch { return null }
}

interface KeysFile { dek?: string, wrapped?: string }

export type KeysState = 'none' | 'open' | 'locked'

export class SwarmKeys {
  private readonly path: string
  /** The data key; null while locked (or before the swarm exists). */
  private dek: Buffer | null = null
  /** The unlock key, known from init, a rotation or an unlock until the daemon stops; null without autolock. */
  private unlockKey: Buffer | null = null
  private wrapped: string | null = null

  constructor (swarmDir: string) { this.path = join(swarmDir, 'keys.json') }

  /** Reads keys.json: `none` (no swarm keys yet), `open` (the DEK is at hand) or `locked` (autolock: needs unlock). */
  async load (): Promise<KeysState> {
    const text = await readFile(this.path, 'utf8').catch((err: NodeJS.ErrnoException) => { if (err.code === 'ENOENT') return null; throw err })
    if (text === null) return 'none'
    const f = JSON.parse(text) as KeysFile
    if (typeof f.wrapped === 'string') { this.wrapped = f.wrapped; return 'locked' }
    if (typeof f.dek === 'string') { this.dek = Buffer.from(f.dek, 'base64'); return 'open' }
    throw new Error(`${this.path}: neither a data key nor a wrapped one`)
  }

  get locked (): boolean { return this.dek === null && this.wrapped !== null }

  /** A new data key for a new swarm (or a state written before keys existed); with autolock, a new unlock key. */
  async create (autolock: boolean): Promise<void> {
    this.dek = randomBytes(KEY_BYTES)
    this.unlockKey = autolock ? randomBytes(KEY_BYTES) : null
    await this.save()
  }

  /** `docker swarm unlock`: the DEK unwrapped with the given key, or 401 as dockerd answers a wrong key. */
  unlock (human: string): void {
    if (!this.locked) throw conflict('swarm is not locked')
    const key = parseHumanReadableKey(human)
    const dek = unseal(key, this.wrapped as string)
    if (dek === null) throw unauthorized('swarm could not be unlocked: invalid key provided')
    this.dek = dek
    this.unlockKey = key
  }

  /** The unlock key as dockerd prints it, '' without autolock (and while it is unknown). */
  humanUnlockKey (): string { return this.unlockKey === null ? '' : humanReadableKey(this.unlockKey) }

  /** Autolock turned on or off, or (on) a new unlock key: the DEK is written again, wrapped or plain. */
  async setAutolock (on: boolean, rotate: boolean): Promise<void> {
    if (this.dek === null) throw conflict('the swarm is locked')
    if (on && (this.unlockKey === null || rotate)) this.unlockKey = randomBytes(KEY_BYTES)
    if (!on) this.unlockKey = null
    await this.save()
  }

  async remove (): Promise<void> {
    this.dek = null
    this.unlockKey = null
    this.wrapped = null
    await rm(this.path, { force: true })
  }

  seal (data: Buffer): string {
    if (this.dek === null) throw conflict('the swarm is locked')
    return seal(this.dek, data)
  }

  open (text: string): Buffer {
    if (this.dek === null) throw conflict('the swarm is locked')
    const data = unseal(this.dek, text)
    if (data === null) throw new Error('sealed swarm data does not open with the swarm\'s data key')
    return data
  }

  private async save (): Promise<void> {
    const dek = this.dek as Buffer
    this.wrapped = this.unlockKey === null ? null : seal(this.unlockKey, dek)
    const f: KeysFile = this.wrapped === null ? { dek: dek.toString('base64') } : { wrapped: this.wrapped }
    await writeFileAtomic(this.path, JSON.stringify(f), { mode: 0o600 })
  }
}
