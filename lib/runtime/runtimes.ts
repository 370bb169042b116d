// The OCI runtimes a daemon knows by name, as dockerd's: the stock `runc` (also under containerd's name for it,
// io.containerd.runc.v2), the ones daemon.json's "runtimes" or --add-runtime configure (a binary, and the options it
// gets before each command: runtimeArgs), and the default a create that names none gets. A container keeps the name
// it was created with; each start resolves it again (a runtime a reload removed fails the next start, as in dockerd),
// while a running container keeps the binary it was started with (RunSpec.runtime) until it exits.
import { invalidArgument } from '../errors.js'

/** One runtime: the name containers give, the binary (a path, or a name looked up in PATH) and its options. */
export interface RuntimeBinary { name: string, path: string, args: string[] }

/** dockerd's stock runtime (a configured runtime may not take its name). */
export const STOCK_RUNTIME = 'runc'
/** containerd's name for the stock runtime, which dockerd accepts too. */
export const CONTAINERD_RUNC = 'io.containerd.runc.v2'

export interface RuntimesConfig {
  /** The configured runtimes by name (daemon.json's "runtimes"; --add-runtime). */
  runtimes: Readonly<Record<string, { path: string, runtimeArgs?: readonly string[] }>>
  /** The name of the runtime containers get when they name none (a configured one, or the stock runc). */
  defaultName: string
  /**
   * The default's binary (checked at start): the stock runc's when the default is runc, an entry of its own when it
   * is neither configured nor stock (Berth's --runtime PATH).
   */
  defaultPath?: string
  /** The stock runc's binary when the default is another runtime (default: runc, looked up in PATH). */
  stockPath?: string
}

/** Whether a runtime name is the stock runc's (containerd's name for it too, unless a configured runtime takes it). */
export function isStockRuntime (name: string, configured: RuntimesConfig['runtimes'] = {}): boolean {
  return name === STOCK_RUNTIME || (name === CONTAINERD_RUNC && configured[CONTAINERD_RUNC] === undefined)
}

/** The names a daemon knows and their binaries; replaced as a whole by a reload. */
export class RuntimeTable {
  private entries = new Map<string, RuntimeBinary>()
  private dflt = STOCK_RUNTIME
  /** The start's configuration (its default's checked binary), and the one in use. */
  private readonly first: RuntimesConfig
  private config: RuntimesConfig

  constructor (c: RuntimesConfig) {
    this.first = c
    this.config = c
    this.configure(c)
  }

  /**
   * A reload: new configured runtimes, a new default, or both (the start's default keeps the binary checked then).
   * Throws, changing nothing, for a configuration refused. Containers that run keep the binary they started with.
   */
  reconfigure (runtimes: RuntimesConfig['runtimes'] | undefined, defaultName: string | undefined): void {
    const f = this.first
    const name = defaultName ?? this.config.defaultName
    this.configure({ runtimes: runtimes ?? this.config.runtimes, defaultName: name, ...(name === f.defaultName && f.defaultPath !== undefined ? { defaultPath: f.defaultPath } : {}), ...(f.stockPath !== undefined ? { stockPath: f.stockPath } : {}) })
  }

  private configure (c: RuntimesConfig): void {
    const entries = new Map<string, RuntimeBinary>()
    const stock = (isStockRuntime(c.defaultName, c.runtimes) ? c.defaultPath : undefined) ?? c.stockPath ?? STOCK_RUNTIME
    for (const name of [STOCK_RUNTIME, CONTAINERD_RUNC]) entries.set(name, { name, path: stock, args: [] })
    for (const [name, r] of Object.entries(c.runtimes)) {
      if (name === STOCK_RUNTIME) throw invalidArgument(`runtime name '${STOCK_RUNTIME}' is reserved`)
      entries.set(name, { name, path: r.path, args: [...(r.runtimeArgs ?? [])] })
    }
    if (!entries.has(c.defaultName) && c.defaultPath !== undefined) entries.set(c.defaultName, { name: c.defaultName, path: c.defaultPath, args: [] })
    if (!entries.has(c.defaultName)) throw invalidArgument(`specified default runtime '${c.defaultName}' does not exist`)
    this.entries = entries
    this.dflt = c.defaultName
    this.config = c
  }

  /** The runtime containers get when their create names none. */
  get defaultName (): string { return this.dflt }

  /** Every runtime, the stock ones first (docker info's Runtimes). */
  list (): RuntimeBinary[] { return [...this.entries.values()] }

  has (name: string): boolean { return this.entries.has(name) }

  /** The runtime of that name ('' is the default); an unknown one is dockerd's 400. */
  resolve (name: string): RuntimeBinary {
    const r = this.entries.get(name === '' ? this.dflt : name)
    if (r === undefined) throw invalidArgument(`unknown or invalid runtime name: ${name}`)
    return r
  }
}
