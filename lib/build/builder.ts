// The classic builder: runs a Dockerfile's stages step by step over a BuildBackend, printing dockerd's progress
// lines, probing the layer cache before each step, committing one image per step (RUN in a real container, COPY/ADD
// and WORKDIR as layers written directly, the other instructions as config-only images).
import { mkdir, rm } from 'node:fs/promises'
import { join, posix } from 'node:path'
import { invalidArgument, EngineError } from '../errors.js'
import { parseReference, familiarString, withDefaultTag } from '../image/reference.js'
import type { ImageRunConfig } from '../image/types.js'
import { parseDockerfile, parseLine, type DockerfileNode } from './dockerfile-parser.js'
import { planBuild, stagesUpTo, flagValue, type Stage } from './stages.js'
import { expandWord, envMap } from './shell-lex.js'
import type { BuildBackend, BuildImage, BuildProgress } from './backend.js'
import { cloneConfig, shellOf, goQuoteList, canonicalJson, nextImageConfig, setEnv, DEFAULT_PATH, parseGoDuration, goDuration } from './step-config.js'
import { resolveSources, sourcesHash } from './copy-sources.js'
import { stageCopy } from './copy-layer.js'
import type { BuildContext } from './build-context.js'
import { resolveContextSources, contextSourcesHash, contextLayer } from './context-copy.js'
import { resolveChown, statInLayers } from './layer-lookup.js'
import { packDir } from '../stream/tar.js'

export interface BuildOptions {
  /** The stored, indexed context. */
  context: BuildContext
  /** Where the context is unpacked when an instruction needs real files (ADD of an archive or a URL). */
  contextDir: string
  /** The build's own scratch directory (staging trees, downloads). */
  workDir: string
  dockerfile: string
  tags: string[]
  buildArgs: Map<string, string | null>
  labels: Record<string, string>
  target: string
  noCache: boolean
  pull: boolean
  remove: boolean
  forceRemove: boolean
  quiet: boolean
  /** HostConfig fields of RUN containers (NetworkMode, ExtraHosts, ShmSize, Memory, Cpu*…). */
  hostConfig: Record<string, unknown>
  platform: string
  cacheFrom: string[]
  registryConfig: Record<string, unknown>
  arch: string
  signal: AbortSignal
}

export interface BuildResult { imageId: string, tags: string[] }

/** A failed RUN: dockerd's message and the exit code the client exits with. */
export class RunFailed extends EngineError {
  readonly exitCode: number
  constructor (message: string, code: number) {
    super('internal', message)
    this.exitCode = code
  }
}

interface StageState {
  image: BuildImage | undefined
  imageId: string
  runConfig: ImageRunConfig
  maintainer: string
  cmdSet: boolean
  /** ARGs declared in this stage and their values (undefined: declared without a value). */
  args: Map<string, string | undefined>
}

const SYNTAX_OK = /^(docker\.io\/)?docker\/dockerfile(:1(\.[0-9]+){0,2})?(@sha256:[0-9a-f]{64})?$/

function shortId (id: string): string { return id.replace(/^sha256:/, '').slice(0, 12) }

export class Builder {
  private readonly b: BuildBackend
  private readonly o: BuildOptions
  private readonly out: BuildProgress
  private stepNo = 0
  private total = 0
  private escape = '\\'
  private readonly stageResults: StageState[] = []
  private readonly stageNames = new Map<string, number>()
  private readonly usedArgs = new Set<string>()
  private readonly metaArgs = new Map<string, string | undefined>()
  private readonly temp: string[] = []
  private tmpSeq = 0

  constructor (backend: BuildBackend, o: BuildOptions, out: BuildProgress) {
    this.b = backend
    this.o = o
    // quiet builds print nothing but the result
    this.out = o.quiet ? { stream: () => {}, aux: (v) => { out.aux(v) } } : out
  }

  private say (text: string): void { this.out.stream(text) }

  async readDockerfile (): Promise<string> {
    const rel = posix.normalize('/' + this.o.dockerfile.replace(/\\/g, '/')).slice(1)
    const tries = this.o.dockerfile === 'Dockerfile' ? ['Dockerfile', 'dockerfile'] : [rel]
    for (const t of tries) {
      const e = this.o.context.resolve(t)?.entry
      if (e !== undefined && (e.type === 'file' || e.type === 'link')) return (await this.o.context.read(e)).toString('utf8')
    }
    throw invalidArgument(`Cannot locate specified Dockerfile: ${this.o.dockerfile}`)
  }

  async build (): Promise<BuildResult> {
    const tags = this.o.tags.map((t) => {
      const r = parseReference(t)
      if (r.digest !== undefined) throw invalidArgument(`invalid reference format: ${t}`)
      return familiarString(withDefaultTag(r))
    })
    const df = parseDockerfile(await this.readDockerfile())
    if (df.syntax !== undefined && !SYNTAX_OK.test(df.syntax)) {
      throw invalidArgument(`the Dockerfile asks for the BuildKit frontend "${df.syntax}" (# syntax=): the classic builder only speaks the standard Dockerfile syntax; remove the directive or build with BuildKit`)
    }
    this.escape = df.escapeToken
    const plan = planBuild(df)
    const stages = stagesUpTo(plan, this.o.target)
    const last = stages[stages.length - 1] as Stage
    const labelKeys = Object.keys(this.o.labels)
    if (labelKeys.length > 0) {
      const line = 'LABEL ' + labelKeys.map((k) => `${JSON.stringify(k)}='${this.o.labels[k] as string}'`).join(' ')
      last.commands.push(parseLine(line, last.from.endLine, last.from.endLine, this.escape))
    }
    this.total = plan.metaArgs.length + stages.length + stages.reduce((n, s) => n + s.commands.length, 0)
    for (const w of df.warnings) this.say(`[WARNING]: ${w}\n`)
    try {
      for (const n of plan.metaArgs) {
        this.step(n)
        for (const [k, v] of this.argPairs(n, new Map())) this.metaArgs.set(k, this.o.buildArgs.get(k) ?? v)
      }
      let state: StageState | undefined
      for (const s of stages) {
        state = await this.runStage(s)
        this.out.aux({ ID: state.imageId })
      }
      const final = state as StageState
      if (final.imageId === '') throw invalidArgument('No image was generated. Is your Dockerfile empty?')
      const unused = [...this.o.buildArgs.keys()].filter((k) => !this.usedArgs.has(k) && !BUILTIN_ARGS.has(k)).sort()
      if (unused.length > 0) this.say(`[Warning] One or more build-args [${unused.join(' ')}] were not consumed\n`)
      this.say(`Successfully built ${shortId(final.imageId)}\n`)
      for (const t of tags) {
        await this.b.tagImage(final.imageId, t)
        this.say(`Successfully tagged ${t}\n`)
      }
      return { imageId: final.imageId, tags }
    } finally {
      for (const d of this.temp) await rm(d, { recursive: true, force: true }).catch(() => {})
    }
  }

  private step (n: DockerfileNode): void {
    this.stepNo++
    this.say(`Step ${this.stepNo}/${this.total} : ${n.original}\n`)
  }

  private async scratchDir (): Promise<string> {
    const d = join(this.o.workDir, `s${++this.tmpSeq}`)
    await mkdir(d, { recursive: true })
    this.temp.push(d)
    return d
  }

  // ---- stages -----------------------------------------------------------------------------------------------------

  private async runStage (s: Stage): Promise<StageState> {
    this.step(s.from)
    const metaEnv = new Map<string, string>()
    for (const [k, v] of this.metaArgs) if (v !== undefined) metaEnv.set(k, v)
    const base = this.expand(s.base, metaEnv, s.from)
    const state: StageState = { image: undefined, imageId: '', runConfig: {}, maintainer: '', cmdSet: false, args: new Map() }
    const prior = this.stageNames.get(base.toLowerCase())
    if (prior !== undefined) {
      const p = this.stageResults[prior] as StageState
      state.image = p.image
      state.imageId = p.imageId
    } else if (base.toLowerCase() !== 'scratch') {
      const platform = s.platform !== undefined ? this.expand(s.platform, metaEnv, s.from) : this.o.platform
      const img = await this.baseImage(base, platform)
      state.image = img
      state.imageId = img.id
    }
    state.runConfig = cloneConfig(state.image?.config.config)
    if (!(state.runConfig.Env ?? []).some((e) => e.startsWith('PATH='))) state.runConfig.Env = [...(state.runConfig.Env ?? []), `PATH=${DEFAULT_PATH}`]
    this.say(` ---> ${shortId(state.imageId)}\n`)
    const triggers = state.runConfig.OnBuild ?? []
    if (triggers.length > 0) {
      this.say(`# Executing ${triggers.length} build trigger${triggers.length === 1 ? '' : 's'}\n`)
      state.runConfig.OnBuild = null
      for (const t of triggers) await this.dispatch(state, parseLine(t, s.from.startLine, s.from.endLine, this.escape))
    }
    for (const n of s.commands) {
      this.o.signal.throwIfAborted()
      this.step(n)
      await this.dispatch(state, n)
      this.say(` ---> ${shortId(state.imageId)}\n`)
    }
    this.stageResults[s.index] = state
    if (s.name !== undefined) this.stageNames.set(s.name, s.index)
    return state
  }

  private async baseImage (ref: string, platform: string): Promise<BuildImage> {
    if (!this.o.pull) {
      const local = this.b.findImage(ref)
      if (local !== undefined) return local
    }
    try {
      return await this.b.pullImage(ref, platform, this.o.registryConfig, this.out, this.o.signal)
    } catch (err) {
      const local = this.o.pull ? this.b.findImage(ref) : undefined
      if (local !== undefined) return local
      throw err
    }
  }

  // ---- variables --------------------------------------------------------------------------------------------------

  private expand (word: string, env: ReadonlyMap<string, string>, n: DockerfileNode): string {
    try {
      return expandWord(word, env, this.escape)
    } catch (err) {
      throw invalidArgument(`dockerfile parse error on line ${n.startLine}: ${(err as Error).message}`)
    }
  }

  /** Variables for substitution: the stage's ARG values, overridden by its ENV. */
  private substEnv (state: StageState): Map<string, string> {
    const env = new Map<string, string>()
    for (const [k, v] of this.argValues(state)) env.set(k, v)
    for (const [k, v] of envMap(state.runConfig.Env)) env.set(k, v)
    return env
  }

  /** Declared ARGs with a value: the --build-arg value, else the default, else a meta ARG's value. */
  private argValues (state: StageState): Map<string, string> {
    const out = new Map<string, string>()
    for (const [k, dflt] of state.args) {
      const given = this.o.buildArgs.get(k)
      const v = given !== undefined && given !== null ? given : dflt ?? this.metaArgs.get(k)
      if (v !== undefined) out.set(k, v)
    }
    return out
  }

  private argPairs (n: DockerfileNode, env: ReadonlyMap<string, string>): Array<[string, string | undefined]> {
    return n.args.map((a) => {
      const eq = a.indexOf('=')
      if (eq === -1) return [a, undefined]
      return [a.slice(0, eq), this.expand(a.slice(eq + 1), env, n)]
    })
  }

  // ---- cache ------------------------------------------------------------------------------------------------------

  private probe (state: StageState, containerConfig: ImageRunConfig): BuildImage | undefined {
    if (this.o.noCache) return undefined
    const key = canonicalJson(containerConfig)
    const parentHistory = state.image?.config.history?.length ?? 0
    let best: BuildImage | undefined
    for (const img of this.b.allImages()) {
      if (img.parent !== state.imageId) continue
      if ((img.config.history?.length ?? 0) !== parentHistory + 1) continue
      if (img.config.container_config === undefined || canonicalJson(img.config.container_config) !== key) continue
      if (best === undefined || (img.config.created ?? '') > (best.config.created ?? '')) best = img
    }
    if (best === undefined && this.o.cacheFrom.length > 0) best = this.probeCacheFrom(state, containerConfig)
    if (best !== undefined) this.say(' ---> Using cache\n')
    return best
  }

  /** --cache-from: images (and their parents) whose history continues the current image's with this step. */
  private probeCacheFrom (state: StageState, containerConfig: ImageRunConfig): BuildImage | undefined {
    const hist = state.image?.config.history ?? []
    const diffs = state.image?.config.rootfs.diff_ids ?? []
    const createdBy = (containerConfig.Cmd ?? []).join(' ')
    for (const ref of this.o.cacheFrom) {
      let img = this.b.findImage(ref)
      while (img !== undefined) {
        const h = img.config.history ?? []
        const d = img.config.rootfs.diff_ids
        if (h.length === hist.length + 1 && hist.every((e, i) => e.created_by === h[i]?.created_by) &&
          diffs.every((x, i) => x === d[i]) && h[hist.length]?.created_by === createdBy) return img
        img = img.parent !== '' ? this.b.imageById(img.parent) : undefined
      }
    }
    return undefined
  }

  // ---- commits ----------------------------------------------------------------------------------------------------

  private containerConfigFor (state: StageState, cmd: string[]): ImageRunConfig {
    const c = cloneConfig(state.runConfig)
    c.Cmd = cmd
    return { ...c, Image: state.imageId } as ImageRunConfig
  }

  /** A config-only step (CMD, ENV, LABEL…): cached, or a new image with an empty layer. */
  private async commitConfig (state: StageState, comment: string): Promise<void> {
    const cc = this.containerConfigFor(state, [...shellOf(state.runConfig), '#(nop) ', comment])
    const hit = this.probe(state, cc)
    if (hit !== undefined) { this.adopt(state, hit); return }
    const blob = nextImageConfig({ base: state.image?.config, runConfig: state.runConfig, containerConfig: cc, createdBy: (cc.Cmd as string[]).join(' '), emptyLayer: true, author: state.maintainer, arch: this.o.arch })
    this.adopt(state, await this.b.createImage(state.imageId, null, blob))
  }

  private adopt (state: StageState, img: BuildImage): void {
    state.image = img
    state.imageId = img.id
  }

  // ---- instructions -----------------------------------------------------------------------------------------------

  private async dispatch (state: StageState, n: DockerfileNode): Promise<void> {
    const env = this.substEnv(state)
    const rc = state.runConfig
    switch (n.name) {
      case 'run': await this.run(state, n); return
      case 'copy': case 'add': await this.copy(state, n, env); return
      case 'workdir': await this.workdir(state, n, env); return
      case 'env': {
        const pairs: string[] = []
        rc.Env = [...(rc.Env ?? [])]
        for (let i = 0; i < n.args.length; i += 2) {
          const k = this.expand(n.args[i] as string, env, n)
          const v = this.expand(n.args[i + 1] as string, env, n)
          setEnv(rc.Env, k, v)
          env.set(k, v)
          pairs.push(`${k}=${v}`)
        }
        await this.commitConfig(state, 'ENV ' + pairs.join(' '))
        return
      }
      case 'label': {
        const pairs: string[] = []
        rc.Labels = { ...(rc.Labels ?? {}) }
        for (let i = 0; i < n.args.length; i += 2) {
          const k = this.expand(n.args[i] as string, env, n)
          const v = this.expand(n.args[i + 1] as string, env, n)
          rc.Labels[k] = v
          pairs.push(`${k}=${v}`)
        }
        await this.commitConfig(state, 'LABEL ' + pairs.join(' '))
        return
      }
      case 'arg': {
        const parts: string[] = []
        for (const [k, v] of this.argPairs(n, env)) {
          state.args.set(k, v)
          this.usedArgs.add(k)
          parts.push(v !== undefined ? `${k}=${v}` : k)
        }
        await this.commitConfig(state, 'ARG ' + parts.join(' '))
        return
      }
      case 'cmd': {
        rc.Cmd = n.json ? [...n.args] : [...shellOf(rc), n.args[0] ?? '']
        state.cmdSet = true
        await this.commitConfig(state, 'CMD ' + goQuoteList(rc.Cmd))
        return
      }
      case 'entrypoint': {
        rc.Entrypoint = n.json ? [...n.args] : (n.args.length === 0 ? null : [...shellOf(rc), n.args[0] as string])
        if (!state.cmdSet) rc.Cmd = null
        await this.commitConfig(state, 'ENTRYPOINT ' + goQuoteList(rc.Entrypoint ?? []))
        return
      }
      case 'expose': {
        const ports = n.args.map((p) => this.expand(p, env, n))
        rc.ExposedPorts = { ...(rc.ExposedPorts ?? {}) }
        for (const p of ports) for (const k of exposedKeys(p, n)) rc.ExposedPorts[k] = {}
        await this.commitConfig(state, 'EXPOSE ' + ports.join(' '))
        return
      }
      case 'user': {
        rc.User = this.expand(n.args[0] as string, env, n)
        await this.commitConfig(state, 'USER ' + rc.User)
        return
      }
      case 'volume': {
        const vols = n.args.map((v) => this.expand(v, env, n))
        rc.Volumes = { ...(rc.Volumes ?? {}) }
        for (const v of vols) {
          if (v.trim() === '') throw invalidArgument('VOLUME specified can not be an empty string')
          rc.Volumes[v] = {}
        }
        await this.commitConfig(state, `VOLUME [${vols.join(' ')}]`)
        return
      }
      case 'stopsignal': {
        const sig = this.expand(n.args[0] as string, env, n)
        if (!/^(SIG)?[A-Z0-9+-]+$/i.test(sig)) throw invalidArgument(`Invalid signal: ${sig}`)
        rc.StopSignal = sig
        await this.commitConfig(state, 'STOPSIGNAL ' + sig)
        return
      }
      case 'shell': {
        rc.Shell = [...n.args]
        await this.commitConfig(state, `SHELL [${n.args.join(' ')}]`)
        return
      }
      case 'maintainer': {
        state.maintainer = n.args[0] as string
        await this.commitConfig(state, 'MAINTAINER ' + state.maintainer)
        return
      }
      case 'onbuild': {
        const expr = (n.args[0] as string).trim()
        rc.OnBuild = [...(rc.OnBuild ?? []), expr]
        await this.commitConfig(state, 'ONBUILD ' + expr)
        return
      }
      case 'healthcheck': {
        rc.Healthcheck = healthConfig(n, rc)
        await this.commitConfig(state, 'HEALTHCHECK ' + healthComment(rc.Healthcheck as HealthConfig))
        return
      }
      default:
        throw invalidArgument(`dockerfile parse error on line ${n.startLine}: unknown instruction: ${n.name.toUpperCase()}`)
    }
  }

  private async run (state: StageState, n: DockerfileNode): Promise<void> {
    const rc = state.runConfig
    const cmd = n.json ? [...n.args] : [...shellOf(rc), n.args[0] ?? '']
    const envKeys = new Set(envMap(rc.Env).keys())
    const argEnv = [...this.argValues(state)].filter(([k]) => !envKeys.has(k)).map(([k, v]) => `${k}=${v}`).sort()
    for (const [k] of this.argValues(state)) this.usedArgs.add(k)
    const saveCmd = argEnv.length > 0 ? [`|${argEnv.length}`, ...argEnv, ...cmd] : cmd
    const cc = this.containerConfigFor(state, saveCmd)
    if (cc.Entrypoint !== undefined) cc.Entrypoint = null
    const hit = this.probe(state, cc)
    if (hit !== undefined) { this.adopt(state, hit); return }
    this.o.signal.throwIfAborted()
    const { id, warnings } = await this.b.createContainer({
      imageId: state.imageId,
      config: { ...cloneConfig(rc), Cmd: cmd, Entrypoint: [''], Env: [...(rc.Env ?? []), ...argEnv], Healthcheck: { Test: ['NONE'] } },
      hostConfig: { ...this.o.hostConfig, LogConfig: { Type: 'json-file', Config: {} } }
    })
    for (const w of warnings) this.say(` ---> [Warning] ${w}\n`)
    this.say(` ---> Running in ${shortId(id)}\n`)
    let ok = false
    try {
      const code = await this.b.runContainer(id, (stream, chunk) => {
        const text = chunk.toString('utf8')
        this.say(stream === 'stderr' ? `\u001b[91m${text}\u001b[0m` : text)
      }, this.o.signal)
      if (code !== 0) throw new RunFailed(`The command '${cmd.join(' ')}' returned a non-zero code: ${code}`, code)
      const blob = nextImageConfig({ base: state.image?.config, runConfig: rc, containerConfig: cc, createdBy: saveCmd.join(' '), emptyLayer: false, author: state.maintainer, arch: this.o.arch })
      this.adopt(state, await this.b.commitContainer(id, state.imageId, blob))
      ok = true
    } finally {
      if (this.o.forceRemove || (this.o.remove && ok) || this.o.signal.aborted) {
        await this.b.removeContainer(id).then(() => { this.say(`Removing intermediate container ${shortId(id)}\n`) },
          (err: Error) => { this.say(`Error removing intermediate container ${shortId(id)}: ${err.message}\n`) })
      }
    }
  }

  private async workdir (state: StageState, n: DockerfileNode, env: ReadonlyMap<string, string>): Promise<void> {
    const p = this.expand(n.args[0] as string, env, n)
    const rc = state.runConfig
    rc.WorkingDir = posix.normalize(p.startsWith('/') ? p : posix.join('/', rc.WorkingDir ?? '/', p))
    const cc = this.containerConfigFor(state, [...shellOf(rc), `#(nop) WORKDIR ${rc.WorkingDir}`])
    const hit = this.probe(state, cc)
    if (hit !== undefined) { this.adopt(state, hit); return }
    const layers = state.imageId === '' ? [] : await this.b.layerDirs(state.imageId)
    const exists = (await statInLayers(layers, rc.WorkingDir))?.isDirectory() === true
    const blob = nextImageConfig({ base: state.image?.config, runConfig: rc, containerConfig: cc, createdBy: (cc.Cmd as string[]).join(' '), emptyLayer: exists, author: state.maintainer, arch: this.o.arch })
    if (exists) { this.adopt(state, await this.b.createImage(state.imageId, null, blob)); return }
    const staging = await this.scratchDir()
    await mkdirIn(staging, rc.WorkingDir, layers)
    this.adopt(state, await this.b.createImage(state.imageId, packDir(staging), blob))
  }

  private async copy (state: StageState, n: DockerfileNode, env: ReadonlyMap<string, string>): Promise<void> {
    const cmdName = n.name.toUpperCase()
    const words = n.args.map((a) => this.expand(a, env, n))
    const dest = words.pop() as string
    const fromFlag = flagValue(n, 'from')
    const chownFlag = flagValue(n, 'chown')
    const chmodFlag = flagValue(n, 'chmod')
    let chmod: number | undefined
    if (chmodFlag !== undefined) {
      const c = this.expand(chmodFlag, env, n)
      if (!/^[0-7]{3,4}$/.test(c)) throw invalidArgument(`invalid chmod parameter: ${c}. it should be octal string and between 0 and 07777`)
      chmod = parseInt(c, 8)
    }
    const chown = chownFlag !== undefined ? this.expand(chownFlag, env, n) : undefined
    if (fromFlag === undefined && !(n.name === 'add' && await this.needsFiles(words))) {
      await this.copyFromContext(state, cmdName, words, dest, chown, chmod, chmodFlag)
      return
    }
    let root = this.o.contextDir
    let release: (() => Promise<void>) | undefined
    if (fromFlag === undefined) await this.o.context.unpack(this.o.contextDir)
    else {
      const from = this.expand(fromFlag, env, n)
      const idx = /^\d+$/.test(from) ? Number(from) : this.stageNames.get(from.toLowerCase())
      let img: BuildImage | undefined
      if (idx !== undefined) {
        const st = this.stageResults[idx]
        if (st === undefined) throw invalidArgument(`invalid from flag value ${from}: refers to current build stage`)
        img = st.image
      } else img = await this.baseImage(from, this.o.platform)
      root = await this.scratchDir()
      if (img !== undefined) {
        const mounted = await this.mountLayers(img.id, root)
        release = mounted
      }
    }
    try {
      const sources = await resolveSources(words, { cmdName, root, isContext: fromFlag === undefined, allowUrl: n.name === 'add', downloadDir: await this.scratchDir(), signal: this.o.signal })
      const srcHash = sourcesHash(sources)
      const extra = `${chown !== undefined ? `--chown=${chown} ` : ''}${chmod !== undefined ? `--chmod=${chmodFlag as string} ` : ''}`
      const cc = this.containerConfigFor(state, [...shellOf(state.runConfig), `#(nop) ${cmdName} ${extra}${srcHash} in ${dest} `])
      const hit = this.probe(state, cc)
      if (hit !== undefined) { this.adopt(state, hit); return }
      const layers = state.imageId === '' ? [] : await this.b.layerDirs(state.imageId)
      const owner = chown !== undefined ? await resolveChown(layers, chown).catch((err: Error) => { throw invalidArgument(err.message) }) : undefined
      const staging = await this.scratchDir()
      await stageCopy({ cmdName, sources, dest, workdir: state.runConfig.WorkingDir ?? '/', layers, staging, ...(owner !== undefined ? { chown: owner } : {}), preserveOwner: false, ...(chmod !== undefined ? { chmod } : {}), unpackArchives: n.name === 'add' })
      const blob = nextImageConfig({ base: state.image?.config, runConfig: state.runConfig, containerConfig: cc, createdBy: (cc.Cmd as string[]).join(' '), emptyLayer: false, author: state.maintainer, arch: this.o.arch })
      this.adopt(state, await this.b.createImage(state.imageId, packDir(staging), blob))
    } finally {
      await release?.()
    }
  }

  /** ADD sources that need a real tree: URLs and local archives (unpacked into the layer). */
  private async needsFiles (srcs: readonly string[]): Promise<boolean> {
    if (srcs.some((s) => /^https?:\/\//i.test(s))) return true
    for (const s of resolveContextSources(this.o.context, srcs, 'ADD')) {
      if (s.isDir || s.entry === undefined) continue
      const head = await this.o.context.read(s.entry, 262)
      if ((head[0] === 0x1f && head[1] === 0x8b) || head.subarray(257, 262).toString('latin1') === 'ustar') return true
    }
    return false
  }

  /** COPY/ADD of context files: checksum from the index, the layer written straight from the stored context. */
  private async copyFromContext (state: StageState, cmdName: string, srcs: string[], dest: string, chown: string | undefined, chmod: number | undefined, chmodFlag: string | undefined): Promise<void> {
    const ctx = this.o.context
    const sources = resolveContextSources(ctx, srcs, cmdName)
    const srcHash = contextSourcesHash(ctx, sources)
    const extra = `${chown !== undefined ? `--chown=${chown} ` : ''}${chmod !== undefined ? `--chmod=${chmodFlag as string} ` : ''}`
    const cc = this.containerConfigFor(state, [...shellOf(state.runConfig), `#(nop) ${cmdName} ${extra}${srcHash} in ${dest} `])
    const hit = this.probe(state, cc)
    if (hit !== undefined) { this.adopt(state, hit); return }
    const layers = state.imageId === '' ? [] : await this.b.layerDirs(state.imageId)
    const owner = chown !== undefined ? await resolveChown(layers, chown).catch((err: Error) => { throw invalidArgument(err.message) }) : undefined
    const tar = await contextLayer(ctx, sources, { cmdName, dest, workdir: state.runConfig.WorkingDir ?? '/', layers, ...(owner !== undefined ? { chown: owner } : {}), ...(chmod !== undefined ? { chmod } : {}) })
    const blob = nextImageConfig({ base: state.image?.config, runConfig: state.runConfig, containerConfig: cc, createdBy: (cc.Cmd as string[]).join(' '), emptyLayer: false, author: state.maintainer, arch: this.o.arch })
    this.adopt(state, await this.b.createImage(state.imageId, tar, blob))
  }

  /** Copies an image's merged filesystem view into `dir` (COPY --from): the layers applied lowest first. */
  private async mountLayers (imageId: string, dir: string): Promise<() => Promise<void>> {
    const { mergeLayers } = await import('./merge-layers.js')
    await mergeLayers(await this.b.layerDirs(imageId), dir)
    return async () => { await rm(dir, { recursive: true, force: true }) }
  }
}

const BUILTIN_ARGS = new Set(['HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy', 'FTP_PROXY', 'ftp_proxy', 'NO_PROXY', 'no_proxy', 'ALL_PROXY', 'all_proxy'])

async function mkdirIn (staging: string, abs: string, layers: string[]): Promise<void> {
  const { chmod, lchown } = await import('node:fs/promises')
  const parts = abs.split('/').filter((p) => p !== '')
  for (let i = 0; i < parts.length; i++) {
    const p = '/' + parts.slice(0, i + 1).join('/')
    const st = await statInLayers(layers, p)
    await mkdir(join(staging, p), { recursive: true })
    await chmod(join(staging, p), st !== undefined ? st.mode & 0o7777 : 0o755)
    await lchown(join(staging, p), st?.uid ?? 0, st?.gid ?? 0)
  }
}

function exposedKeys (p: string, n: DockerfileNode): string[] {
  const m = /^(?:[^:]*:)?(\d+)(?:-(\d+))?(?:\/(tcp|udp|sctp))?$/i.exec(p)
  if (m === null) throw invalidArgument(`dockerfile parse error on line ${n.startLine}: invalid containerPort: ${p}`)
  const start = Number(m[1])
  const end = m[2] !== undefined ? Number(m[2]) : start
  const proto = (m[3] ?? 'tcp').toLowerCase()
  if (end < start || end > 65535) throw invalidArgument(`invalid port range: ${p}`)
  const out: string[] = []
  for (let x = start; x <= end; x++) out.push(`${x}/${proto}`)
  return out
}

interface HealthConfig { Test: string[], Interval?: number, Timeout?: number, StartPeriod?: number, StartInterval?: number, Retries?: number }

function healthConfig (n: DockerfileNode, rc: ImageRunConfig): HealthConfig {
  if (n.args[0] === 'NONE') return { Test: ['NONE'] }
  const test = n.json ? ['CMD', ...n.args.slice(1)] : ['CMD-SHELL', n.args[1] as string]
  const hc: HealthConfig = { Test: test }
  const dur = (flag: string, key: 'Interval' | 'Timeout' | 'StartPeriod' | 'StartInterval'): void => {
    const v = flagValue(n, flag)
    if (v === undefined) return
    let ns: number
    try { ns = parseGoDuration(v) } catch (err) { throw invalidArgument((err as Error).message) }
    if (ns !== 0 && ns < 1e6) throw invalidArgument(`Interval "${flag}" cannot be less than 1ms`)
    hc[key] = ns
  }
  dur('interval', 'Interval'); dur('timeout', 'Timeout'); dur('start-period', 'StartPeriod'); dur('start-interval', 'StartInterval')
  const r = flagValue(n, 'retries')
  if (r !== undefined) {
    if (!/^\d+$/.test(r)) throw invalidArgument(`strconv.ParseInt: parsing "${r}": invalid syntax`)
    if (Number(r) < 0) throw invalidArgument('--retries cannot be negative')
    hc.Retries = Number(r)
  }
  void rc
  return hc
}

/** Go's `%q` of *HealthConfig as dockerd's history shows it. */
function healthComment (h: HealthConfig): string {
  if (h.Test[0] === 'NONE') return '&{["NONE"] "0s" "0s" "0s" "0s" \'\\x00\'}'
  const retries = h.Retries ?? 0
  const r = retries < 16 ? `'\\x0${retries.toString(16)}'` : retries < 256 ? `'\\x${retries.toString(16)}'` : `'${String.fromCharCode(retries)}'`
  return `&{${goQuoteList(h.Test)} "${goDuration(h.Interval ?? 0)}" "${goDuration(h.Timeout ?? 0)}" "${goDuration(h.StartPeriod ?? 0)}" "${goDuration(h.StartInterval ?? 0)}" ${r}}`
}
