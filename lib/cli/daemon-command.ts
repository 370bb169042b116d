// `berth daemon`: settings from flags and the configuration file (daemon-config.ts), the pidfile, the service
// manager (socket activation, readiness), the engine, and the signals: SIGHUP reloads, SIGTERM/SIGINT stop.
// Owns the process's output: every line goes through the daemon log (output.ts).
import { existsSync, readFileSync } from 'node:fs'
import { readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { errorMessage } from '../errors.js'
import { daemonUsage } from './daemon-flags.js'
import { ConfigError, loadDaemonConfig, mergedSettings, planReload, type DaemonInvocation, type DaemonSettings, type DecodeHelpers } from './daemon-config.js'
import { UsageError } from './flags.js'
import { DaemonLog } from './output.js'
import { collectWhenIdle, compactingGc } from './idle-gc.js'
import { optimiseWhenBusy, type BusyWatch } from './optimise-when-busy.js'
import { berthProgram, codeCacheAtListen } from './daemon-code-cache.js'
import { livePidInFile } from './pidfile.js'
import { sdNotify, takeListenFds, takeNotifySocket } from './systemd.js'
import { BERTH_VERSION } from './version.js'
import type { Engine, EngineOptions } from '../engine/engine.js'

function usageError (msg: string): number {
  process.stderr.write(`berth daemon: ${msg}\nSee 'berth daemon --help'.\n`)
  return 2
}

/**
 * A group name or number → gid; null when no such group. /etc/group is read once, at start, synchronously (before
 * anything is served; as a promise, four trips through the thread pool on a restart's way to /_ping).
 */
function groupId (group: string): number | null {
  if (/^\d+$/.test(group)) return Number(group)
  let text = ''
  try { text = readFileSync('/etc/group', 'utf8') } catch { /* no groups */ }
  for (const line of text.split('\n')) {
    const [name, , gid] = line.split(':')
    if (name === group && gid !== undefined && /^\d+$/.test(gid)) return Number(gid)
  }
  return null
}

async function decodeHelpers (): Promise<DecodeHelpers> {
  const [{ parsePrefix }, { ULIMIT_NAMES }] = await Promise.all([import('../network/cidr.js'), import('../containers/run-options.js')])
  return { ulimitNames: ULIMIT_NAMES, parsePool: parsePrefix }
}

/** The engine's options from the daemon's settings. */
async function engineOptions (s: DaemonSettings, log: DaemonLog, listenFds: Array<{ fd: number, name: string }>): Promise<EngineOptions> {
  // dockerd's TLS flags: --tlsverify implies --tls; certificate paths default to DOCKER_CERT_PATH or ~/.docker
  const certDir = process.env.DOCKER_CERT_PATH ?? join(homedir(), '.docker')
  const tls = s.tls.enabled
    ? {
        cert: s.tls.cert ?? join(certDir, 'cert.pem'),
        key: s.tls.key ?? join(certDir, 'key.pem'),
        ...(s.tls.verify || s.tls.cacert !== undefined ? { ca: s.tls.cacert ?? join(certDir, 'ca.pem') } : {}),
        verify: s.tls.verify
      }
    : undefined
  for (const h of s.hosts) {
    if (h.startsWith('tcp://') && tls === undefined) log.warn(`API is accessible on ${h} without encryption or authentication: anyone who can reach it has root on this host`)
    else if (h.startsWith('tcp://') && !s.tls.verify) log.warn(`API is accessible on ${h} without client authentication (--tls without --tlsverify): anyone who can reach it has root on this host`)
  }
  // dockerd's --group: the docker group by default when it exists; a group named explicitly must exist
  let socketGroup: number | undefined
  if (s.group === undefined) socketGroup = groupId('docker') ?? undefined
  else if (s.group !== '') {
    const gid = groupId(s.group)
    if (gid === null) throw new ConfigError(`group ${s.group} not found (--group: the Unix socket's group)`)
    socketGroup = gid
  }
  const logDriver = s.logDriver ?? (Object.keys(s.logOpts).length > 0 ? 'json-file' : undefined)
  if (logDriver !== undefined) {
    // checked now, with dockerd's words, rather than at every create
    const { decodeLogConfig } = await import('../containers/log-config.js')
    try { decodeLogConfig({ Type: logDriver, Config: s.logOpts }) } catch (err) { throw new ConfigError(`invalid log configuration: ${errorMessage(err)}`) }
  }
  return {
    dataRoot: s.dataRoot,
    hosts: s.hosts,
    listenFds,
    runtime: s.runtime.path,
    runtimeName: s.runtime.name,
    runtimes: s.runtimes,
    insecureRegistries: s.insecureRegistries,
    registryMirrors: s.registryMirrors,
    ...(socketGroup !== undefined ? { socketGroup } : {}),
    ...(s.execRoot !== undefined ? { execRoot: s.execRoot } : {}),
    ...(logDriver !== undefined ? { defaultLogConfig: { type: logDriver, config: s.logOpts } } : {}),
    ...(s.defaultUlimits.length > 0 ? { defaultUlimits: s.defaultUlimits } : {}),
    ...(s.bip !== undefined ? { bip: s.bip } : {}),
    ...(s.defaultAddressPools.length > 0 ? { defaultAddressPools: s.defaultAddressPools } : {}),
    ...(s.bridgeName !== undefined ? { defaultBridge: s.bridgeName } : {}),
    ...(s.networkPrefix !== undefined ? { networkPrefix: s.networkPrefix } : {}),
    ...(s.iptables !== undefined ? { iptables: s.iptables } : {}),
    ...(s.icc !== undefined ? { icc: s.icc } : {}),
    ...(s.userlandProxy !== undefined ? { userlandProxy: s.userlandProxy } : {}),
    ...(s.initPath !== undefined ? { initPath: s.initPath } : {}),
    ...(tls !== undefined ? { tls } : {}),
    ...(s.allowInsecureTcp ? { allowInsecureTcp: true } : {})
  }
}

/** SIGHUP: the file read again and merged with the flags; what dockerd reloads is applied, the rest logged. */
async function reload (engine: Engine, log: DaemonLog, running: DaemonSettings, inv: { flags: Parameters<typeof mergedSettings>[0], configFile: string, explicit: boolean }, h: DecodeHelpers): Promise<DaemonSettings> {
  let next: DaemonSettings
  try {
    next = await mergedSettings(inv.flags, inv.configFile, inv.explicit, h)
  } catch (err) {
    log.error(`reload failed, the configuration in use is kept: ${errorMessage(err)}`)
    return running
  }
  const plan = planReload(running, next)
  const runtimesChanged = plan.changed.some((c) => c.key === 'runtimes' || c.key === 'default-runtime')
  try {
    await engine.reload({
      insecureRegistries: next.insecureRegistries,
      registryMirrors: next.registryMirrors,
      ...(runtimesChanged ? { runtimes: next.runtimes, defaultRuntime: next.runtime.name } : {})
    })
  } catch (err) {
    log.error(`reload failed, the configuration in use is kept: ${errorMessage(err)}`)
    return running
  }
  if (plan.changed.some((c) => c.key === 'log-level')) log.setLevel(next.logLevel)
  const changes = plan.changed.map((c) => `${c.key}: ${c.before} → ${c.after}`)
  log.info(`reloaded configuration from ${inv.configFile}: ${changes.length > 0 ? changes.join('; ') : 'nothing changed'}`)
  if (plan.pending.length > 0) log.warn(`configuration changes that apply at the next start only: ${plan.pending.join(', ')}`)
  // what is not reloaded keeps its running value
  return { ...running, logLevel: next.logLevel, insecureRegistries: next.insecureRegistries, registryMirrors: next.registryMirrors, runtimes: next.runtimes, runtime: next.runtime }
}

export async function daemonCommand (argv: string[]): Promise<number> {
  // SIGHUP (systemctl reload, a closed terminal) never ends the daemon: one that comes before the daemon runs is
  // applied once it does
  let run: DaemonRun | null = null
  let early = false
  const onHup = (): void => { if (run !== null) run.hangup(); else early = true }
  process.on('SIGHUP', onHup)
  try {
    const helpers = await decodeHelpers()
    let inv
    try {
      inv = await loadDaemonConfig(argv, helpers)
    } catch (err) {
      if (err instanceof UsageError) return usageError(err.message)
      if (err instanceof ConfigError) { process.stderr.write(`berth daemon: ${err.message}\n`); return 1 }
      throw err
    }
    if (inv.help) { process.stdout.write(daemonUsage()); return 0 }
    if (inv.validate) { process.stdout.write('configuration OK\n'); return 0 }
    if (inv.purgeNetwork) return await purgeNetwork(inv.settings)
    run = new DaemonRun(inv, helpers)
    if (early) run.hangup()
    try {
      return await run.run()
    } finally {
      await run.settled()
    }
  } finally {
    process.off('SIGHUP', onHup)
  }
}

/**
 * `--purge-network`: what a stopped daemon of these settings left on the host's networking goes. Refused while a
 * daemon holds the data root, or while its containers run (they would lose their networking).
 */
async function purgeNetwork (s: DaemonSettings): Promise<number> {
  const fail = (msg: string): number => { process.stderr.write(`berth daemon --purge-network: ${msg}\n`); return 1 }
  const dataRoot = resolve(s.dataRoot)
  const execRoot = resolve(s.execRoot ?? join(dataRoot, 'run'))
  const [{ lockDirectory }, { purgeEngineNetwork }] = await Promise.all([import('../util/dir-lock.js'), import('../network/purge.js')])
  let lock
  try {
    lock = existsSync(dataRoot) ? await lockDirectory(dataRoot, 'data root', { waitMs: 0 }) : null
  } catch (err) {
    return fail(errorMessage(err))
  }
  try {
    const running: string[] = []
    for (const id of await readdir(join(dataRoot, 'containers')).catch(() => [] as string[])) {
      const rec = JSON.parse(await readFile(join(dataRoot, 'containers', id, 'container.json'), 'utf8').catch(() => '{}')) as { state?: { status?: string } }
      if (['running', 'paused', 'restarting'].includes(rec.state?.status ?? '')) running.push(id.slice(0, 12))
    }
    if (running.length > 0) return fail(`containers still run (${running.join(', ')}): remove them first (docker rm -f), with the daemon running`)
    await purgeEngineNetwork({ dataRoot, execRoot, ...(s.networkPrefix !== undefined ? { prefix: s.networkPrefix } : {}), ...(s.bridgeName !== undefined ? { defaultBridge: s.bridgeName } : {}) })
    process.stdout.write(`removed the host networking of the daemon with data root ${dataRoot} (prefix ${s.networkPrefix ?? 'BERTH'})\n`)
    return 0
  } finally {
    await lock?.release()
  }
}

/** One run of the daemon, from its checks to its stop. */
class DaemonRun {
  private readonly inv: DaemonInvocation
  private readonly helpers: DecodeHelpers
  private readonly log: DaemonLog
  private settings: DaemonSettings
  private engine: Engine | undefined
  private reloading = Promise.resolve()
  private markStarted = (): void => {}
  private readonly started = new Promise<void>((resolve) => { this.markStarted = resolve })

  constructor (inv: DaemonInvocation, helpers: DecodeHelpers) {
    this.inv = inv
    this.helpers = helpers
    this.settings = inv.settings
    this.log = new DaemonLog({ level: inv.settings.logLevel, format: inv.settings.logFormat })
  }

  hangup (): void {
    this.log.info('SIGHUP received: reloading the configuration')
    this.reloading = this.reloading.then(async () => {
      await this.started
      if (this.engine === undefined) return
      this.settings = await reload(this.engine, this.log, this.settings, { flags: this.inv.flags, configFile: this.inv.configFile, explicit: this.inv.flags.has('config-file') }, this.helpers)
    })
  }

  async settled (): Promise<void> {
    this.markStarted()
    await this.reloading
  }

  async run (): Promise<number> {
    const log = this.log
    // V8's optimising compiler once the daemon has sustained work, not for a daemon that waits (optimise-when-busy.ts):
    // off from the moment the listeners are up (a flag changed earlier would cost the boot Node's built-in code cache)
    let busy: BusyWatch | undefined
    const listenFds = takeListenFds()
    const notifySocket = takeNotifySocket()
    let options: EngineOptions
    try {
      options = await engineOptions(this.settings, log, listenFds)
    } catch (err) {
      log.fatal(errorMessage(err))
      return 1
    }
    // the next start's compile: V8's cache of what this one compiled until it listened (daemon-code-cache.ts)
    const atListen = codeCacheAtListen(berthProgram(), resolve(this.settings.execRoot ?? join(resolve(this.settings.dataRoot), 'run')), log)
    options.onListening = () => {
      atListen?.()
      busy ??= optimiseWhenBusy()
    }
    const pidfile = this.settings.pidfile
    // dockerd's pidfile check: a file naming a running daemon stops the start (a stale one is replaced)
    if (pidfile !== undefined) {
      const running = await livePidInFile(pidfile)
      if (running !== null) { log.fatal(`failed to start daemon: pid file found, ensure berth is not running or delete ${pidfile} (pid ${running} is alive)`); return 1 }
    }
    let engine: Engine
    try {
      // the roots claimed first (checks, roots, locks asked for), then the engine's modules initialised
      const { claimStart } = await import('../engine/start-claim.js')
      const claim = await claimStart(options)
      const { createEngine } = await import('../engine/engine.js')
      engine = await createEngine(options, claim)
    } catch (err) {
      // the start checks' failures: one record each, then the verdict
      const failures = (err as { detail?: unknown }).detail
      if (Array.isArray(failures) && failures.length > 1 && failures.every((f) => typeof f === 'string')) {
        for (const f of failures) log.error(f as string)
        log.fatal(`failed to start daemon: the host is not ready (${failures.length} problems above)`)
      } else {
        log.fatal(`failed to start daemon: ${errorMessage(err)}`)
      }
      busy?.close()
      return 1
    }
    this.engine = engine
    this.markStarted()
    if (pidfile !== undefined) await writeFile(pidfile, `${process.pid}\n`)
    const { formatAddress } = await import('../http/listen.js')
    const listening = engine.addresses.map((a) => `${formatAddress(a)}${a.fd !== undefined ? ` (fd ${a.fd})` : ''}`)
    for (const a of listening) log.info(`API listening on ${a}`)
    const rt = engine.runtime
    const shim = engine.host?.shimPath ?? ''
    log.info(`Berth ${BERTH_VERSION} started: data root ${engine.dataRoot}, exec root ${engine.execRoot}, runtime ${rt.name} ${rt.version} (${rt.path}), ` +
      `monitor ${shim}, cgroup ${engine.host?.cgroup ?? '?'}, listening on ${listening.join(', ')}`)
    if (notifySocket !== null) {
      const err = await sdNotify(shim, notifySocket, ['READY=1', `MAINPID=${process.pid}`, `STATUS=listening on ${listening.join(', ')}`])
      if (err !== null) log.warn(`could not notify the service manager (NOTIFY_SOCKET): ${err}`)
    }
    busy?.fromNow() // the boot's own CPU is not a load
    // run as the bundled program (its first line passes --expose-gc): the heap settles after each burst (idle-gc.ts)
    const v8gc = (globalThis as { gc?: () => void }).gc
    const idle = typeof v8gc === 'function' ? collectWhenIdle(compactingGc(v8gc)) : undefined
    const sig = await new Promise<string>((resolve) => {
      process.once('SIGTERM', () => { resolve('SIGTERM') })
      process.once('SIGINT', () => { resolve('SIGINT') })
    })
    log.info(`${sig} received, shutting down (containers keep running)`)
    idle?.close()
    busy?.close()
    if (notifySocket !== null) await sdNotify(shim, notifySocket, ['STOPPING=1'])
    await this.reloading
    await engine.close()
    // only our own: never a file another daemon wrote meanwhile
    if (pidfile !== undefined && (await readFile(pidfile, 'utf8').catch(() => '')).trim() === String(process.pid)) await rm(pidfile, { force: true })
    log.info('daemon stopped')
    return 0
  }
}
