// `berth registry …`: run the registry, make users-file lines, collect garbage, print the deprecation table.
// Called by lib/cli/main.ts; writes to stdout/stderr and returns an exit code (never exits the process itself).
import { parseArgs } from 'node:util'
import { enableLogs } from '../log.js'
import { formatAddress } from '../http/listen.js'
import { hashPassword } from './auth/passwords.js'
import { deprecationMarkdown } from './deprecation.js'
import { createRegistry, collectGarbage, DEFAULT_REGISTRY_LISTEN } from './service.js'

export const DEFAULT_REGISTRY_ROOT = '/var/lib/berth-registry'

export const REGISTRY_USAGE = `Usage: berth registry [flags]            Run the registry (Hub API + OCI distribution API)
       berth registry passwd NAME         Read a password on stdin, print a users-file line NAME:HASH
       berth registry gc [flags]          Delete blobs no manifest references
       berth registry deprecations        Print the API's deprecation table (Markdown)

berth registry flags:
      --listen list         Address(es) to listen on: host:port, :port, unix:///path (default ${DEFAULT_REGISTRY_LISTEN})
      --data-root string    Blobs and records (default ${DEFAULT_REGISTRY_ROOT})
      --auth string         none | token (default none)
      --users string        Users file: one name:hash[:namespace,…] line per user (token auth)
      --realm string        Token endpoint URL for WWW-Authenticate (default <public-url>/token, else the
                            listen address's /token, this machine's name for 0.0.0.0; never the Host header)
      --service string      Token service/audience name (default berth-registry)
      --token-key string    File with the token HMAC key in hex (default <data-root>/auth/token.key, made if missing)
      --public-url string   Base URL for absolute links (default from the Host header)
      --max-blob-size bytes Largest blob accepted (default 32 GiB; suffixes k, m, g)
  -D, --debug               Log requests (DEBUG=berth:registry:*)

berth registry gc flags:
      --data-root string    As above
      --dry-run             Report what would be deleted
      --grace seconds       Spare blobs younger than this (default 3600)
`

function err (s: string): void { process.stderr.write(s + '\n') }

async function readStdin (): Promise<string> {
  const chunks: Buffer[] = []
  for await (const c of process.stdin as AsyncIterable<Buffer>) chunks.push(c)
  return Buffer.concat(chunks).toString('utf8')
}

async function passwd (argv: string[]): Promise<number> {
  const [name, ...rest] = argv
  if (name === undefined || rest.length > 0 || !/^[a-z0-9][a-z0-9._-]*$/.test(name)) {
    err('usage: berth registry passwd NAME   (lowercase name; password on stdin)')
    return 2
  }
  const password = (await readStdin()).replace(/\r?\n$/, '')
  if (password === '') { err('berth registry passwd: empty password'); return 1 }
  process.stdout.write(`${name}:${await hashPassword(password)}\n`)
  return 0
}

async function gc (argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { 'data-root': { type: 'string' }, 'dry-run': { type: 'boolean' }, grace: { type: 'string' } },
    strict: true
  })
  const grace = values.grace === undefined ? undefined : Number(values.grace)
  if (grace !== undefined && !(Number.isFinite(grace) && grace >= 0)) { err(`invalid --grace ${values.grace ?? ''}`); return 2 }
  const r = await collectGarbage(values['data-root'] ?? DEFAULT_REGISTRY_ROOT, {
    dryRun: values['dry-run'] === true,
    ...(grace !== undefined ? { gracePeriod: grace * 1000 } : {})
  })
  for (const d of r.deleted) process.stdout.write(`${values['dry-run'] === true ? 'would delete' : 'deleted'} ${d}\n`)
  process.stdout.write(`${r.marked} blobs referenced, ${r.deleted.length} ${values['dry-run'] === true ? 'to delete' : 'deleted'} (${r.freedBytes} bytes), ${r.spared} spared by the grace period\n`)
  return 0
}

async function serve (argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      listen: { type: 'string', multiple: true },
      'data-root': { type: 'string' },
      auth: { type: 'string' },
      users: { type: 'string' },
      realm: { type: 'string' },
      service: { type: 'string' },
      'token-key': { type: 'string' },
      'public-url': { type: 'string' },
      'max-blob-size': { type: 'string' },
      debug: { type: 'boolean', short: 'D' },
      help: { type: 'boolean', short: 'h' }
    },
    strict: true
  })
  if (values.help === true) { process.stdout.write(REGISTRY_USAGE); return 0 }
  const auth = values.auth ?? 'none'
  if (auth !== 'none' && auth !== 'token') { err(`berth registry: invalid --auth ${auth}: none or token`); return 2 }
  let maxBlobSize: number | undefined
  if (values['max-blob-size'] !== undefined) {
    const m = /^(\d+)([kmg]?)i?b?$/i.exec(values['max-blob-size'].trim())
    maxBlobSize = m === null ? NaN : Number(m[1]) * 1024 ** ' kmg'.indexOf((m[2] ?? '').toLowerCase() || ' ')
    if (!Number.isSafeInteger(maxBlobSize) || maxBlobSize < 1) { err(`berth registry: invalid --max-blob-size ${values['max-blob-size']}`); return 2 }
  }
  if (values.debug === true) enableLogs(process.env.DEBUG ?? 'berth:registry:*')
  const registry = await createRegistry({
    dataRoot: values['data-root'] ?? DEFAULT_REGISTRY_ROOT,
    listen: values.listen ?? [DEFAULT_REGISTRY_LISTEN],
    auth,
    ...(values.users !== undefined ? { users: values.users } : {}),
    ...(values.realm !== undefined ? { realm: values.realm } : {}),
    ...(values.service !== undefined ? { service: values.service } : {}),
    ...(values['token-key'] !== undefined ? { tokenKeyFile: values['token-key'] } : {}),
    ...(values['public-url'] !== undefined ? { publicUrl: values['public-url'] } : {}),
    ...(maxBlobSize !== undefined ? { maxBlobSize } : {})
  })
  for (const a of registry.addresses) err(`berth registry: listening on ${formatAddress(a)} (auth ${auth}, data root ${registry.dataRoot})`)
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve)
    process.once('SIGINT', resolve)
  })
  err('berth registry: shutting down')
  await registry.close()
  return 0
}

/** Entry point for `berth registry ARGS…`. */
export async function registryCommand (argv: string[]): Promise<number> {
  switch (argv[0]) {
    case 'passwd': return await passwd(argv.slice(1))
    case 'gc': return await gc(argv.slice(1))
    case 'deprecations': process.stdout.write(deprecationMarkdown()); return 0
    case 'help': process.stdout.write(REGISTRY_USAGE); return 0
    default: return await serve(argv)
  }
}
