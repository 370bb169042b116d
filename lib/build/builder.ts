// The classic builder: runs a Dockerfile's stages step by step over a BuildBackend, printing dockerd's progress
// lines, probing the layer cache before each step, committing one image per step (RUN in a real container, COPY/ADD
// and WORKDIR as layers written directly, the other instructions as config-only images).
// Long because the instruction dispatch, the cache probe (cache-from included) and RUN share the stage state and the
// step count; COPY/ADD (copy-step.ts), the parser, the shell lexer, config values and the cache have their own files.
import { mkdir, rm } from 'node:fs/promises'
import { join, posix } from 'node:path'
import { EngineError, errorMessage, invalidArgument, isEngineError } from '../errors.js'
import { parseReference, familiarString, withDefaultTag } from '../image/reference.js'
import type { ImageRunConfig } from '../image/types.js'
import { parseDockerfile, parseLine, type DockerfileNode } from './dockerfile-parser.js'
import { planBuild, stagesUpTo, type Stage } from './stages.js'
import { expandWord, envMap, expandedTooLong, MAX_EXPANDED_WORD } from './shell-lex.js'
import type { BuildBackend, BuildImage, BuildProgress } from './backend.js'
import { cloneConfig, shellOf, goQuoteList, canonicalJson, nextImageConfig, setEnv, DEFAULT_PATH } from './step-config.js'
import { statInLayers } from './layer-lookup.js'
import { resolveInImage } from './copy-layer.js'
import { EntryTree } from './entry-tree.js'
import { writeTree, type WriteAttrs } from './tree-writer.js'
import { packDir } from '../stream/tar.js'
import { logger } from '../log.js'
import { RunFailed, shortId, type BuildOptions, type BuildResult, type StageState, type StepHost } from './build-state.js'
import { copyStep } from './copy-step.js'
import { BUILTIN_ARGS, checkStopSignal, exposedKeys, healthConfig, healthComment, type HealthConfig } from './config-values.js'

export { RunFailed, type BuildOptions, type BuildResult }

const log = logger('engine:build')

const SYNTAX_OK = /^(docker\.io\/)?docker\/dockerfile(:1(\.[0-9]+){0,2})?(@sha256:[0-9a-f]{64})?$/

export class Builder implements StepHost {
  readonly backend: BuildBackend
  readonly options: BuildOptions
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
  /** RUN containers being removed while the build goes on (awaited before it ends). */
  private readonly removals: Array<Promise<void>> = []

  constructor (backend: BuildBackend, o: BuildOptions, out: BuildProgress) {
    this.backend = backend
    this.options = o
    this.out = out
  }

  private say (text: string): void { this.out.stream(text) }

  async readDockerfile (): Promise<string> {
    const e = this.options.context.dockerfile
    if (e === undefined) throw invalidArgument(`Cannot locate specified Dockerfile: ${this.options.dockerfile}`)
    return (await this.options.context.read(e)).toString('utf8')
  }

  async build (): Promise<BuildResult> {
    const tags = this.options.tags.map((t) => {
      const r = parseReference(t)
      if (r.digest !== undefined) throw invalidArgument(`invalid reference format: ${t}`)
      return familiarString(withDefaultTag(r))
    })
    const text = await this.readDockerfile()
    if (text.length === 0) throw invalidArgument(`the Dockerfile (${this.options.dockerfile}) cannot be empty`)
    const df = parseDockerfile(text)
    if (df.syntax !== undefined && !SYNTAX_OK.test(df.syntax)) {
      throw invalidArgument(`the Dockerfile asks for the BuildKit frontend "${df.syntax}" (# syntax=): the classic builder only speaks the standard Dockerfile syntax; remove the directive or build with BuildKit`)
    }
    this.escape = df.escapeToken
    const plan = planBuild(df)
    const stages = stagesUpTo(plan, this.options.target)
    const last = stages[stages.length - 1] as Stage
    const labelKeys = Object.keys(this.options.labels)
    if (labelKeys.length > 0) {
      const line = 'LABEL ' + labelKeys.map((k) => `${JSON.stringify(k)}='${this.options.labels[k] as string}'`).join(' ')
      last.commands.push(parseLine(line, last.from.endLine, last.from.endLine, this.escape))
    }
    this.total = plan.metaArgs.length + stages.length + stages.reduce((n, s) => n + s.commands.length, 0)
    for (const w of df.warnings) this.say(`[WARNING]: ${w}\n`)
    try {
      for (const n of plan.metaArgs) {
        this.step(n)
        for (const [k, v] of this.argPairs(n, new Map())) this.metaArgs.set(k, this.options.buildArgs.get(k) ?? v)
      }
      let state: StageState | undefined
      for (const s of stages) {
        state = await this.runStage(s)
        this.out.aux({ ID: state.imageId })
      }
      const final = state as StageState
      if (final.imageId === '') throw invalidArgument('No image was generated. Is your Dockerfile empty?')
      const unused = [...this.options.buildArgs.keys()].filter((k) => !this.usedArgs.has(k) && !BUILTIN_ARGS.has(k)).sort()
      if (unused.length > 0) this.say(`[Warning] One or more build-args [${unused.join(' ')}] were not consumed\n`)
      this.say(`Successfully built ${shortId(final.imageId)}\n`)
      for (const t of tags) {
        await this.backend.tagImage(final.imageId, t)
        this.say(`Successfully tagged ${t}\n`)
      }
      return { imageId: final.imageId, tags }
    } finally {
      await Promise.all(this.removals)
      // best effort: they are inside the build's own directory, which goes next (build-runner.ts) or at the next start
      for (const d of this.temp) await rm(d, { recursive: true, force: true }).catch(() => {})
    }
  }

  private step (n: DockerfileNode): void {
    this.stepNo++
    this.say(`Step ${this.stepNo}/${this.total} : ${n.original}\n`)
  }

  async scratchDir (): Promise<string> {
    const d = join(this.options.workDir, `s${++this.tmpSeq}`)
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
      const platform = s.platform !== undefined ? this.expand(s.platform, metaEnv, s.from) : this.options.platform
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
      this.options.signal.throwIfAborted()
      this.step(n)
      await this.dispatch(state, n)
      this.say(` ---> ${shortId(state.imageId)}\n`)
    }
    this.stageResults[s.index] = state
    if (s.name !== undefined) this.stageNames.set(s.name, s.index)
    return state
  }

  private async baseImage (ref: string, platform: string): Promise<BuildImage> {
    if (!this.options.pull) {
      const local = this.backend.findImage(ref)
      if (local !== undefined) return local
    }
    // with pull=1 a failed pull fails the build even when the image is local (dockerd's --pull)
    return await this.backend.pullImage(ref, platform, this.options.registryConfig, this.out, this.options.signal)
  }

  async imageForFrom (from: string): Promise<BuildImage | undefined> {
    const idx = /^\d+$/.test(from) ? Number(from) : this.stageNames.get(from.toLowerCase())
    if (idx === undefined) {
      // neither a stage nor a local image: a pull, whose failure names the flag (dockerd's wording)
      return await this.baseImage(from, this.options.platform).catch((err: unknown) => {
        throw new EngineError(isEngineError(err) ? err.kind : 'invalid-argument', `invalid from flag value ${from}: ${errorMessage(err)}`, { cause: err })
      })
    }
    const st = this.stageResults[idx]
    if (st === undefined) throw invalidArgument(`invalid from flag value ${from}: refers to current build stage`)
    return st.image
  }

  // ---- variables --------------------------------------------------------------------------------------------------

  /** The instruction whose words are being expanded, and how long they are so far (one cap for all of them). */
  private expanding: { node: DockerfileNode | undefined, total: number } = { node: undefined, total: 0 }

  expand (word: string, env: ReadonlyMap<string, string>, n: DockerfileNode): string {
    try {
      const out = expandWord(word, env, this.escape)
      if (this.expanding.node !== n) this.expanding = { node: n, total: 0 }
      this.expanding.total += out.length
      if (this.expanding.total > MAX_EXPANDED_WORD) throw expandedTooLong()
      return out
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
      const given = this.options.buildArgs.get(k)
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

  /**
   * The cached image for a step. Without --cache-from: the newest image the builder made on the current image with
   * this step's config. With it, as dockerd's classic builder: such an image only when it is an ancestor of one of
   * those images (the rest of the local cache is not used), else one of those images whose history continues the
   * current image's with this step.
   */
  async probe (state: StageState, containerConfig: ImageRunConfig): Promise<BuildImage | undefined> {
    if (this.options.noCache) return undefined
    const key = canonicalJson(containerConfig)
    const parentHistory = state.image?.config.history?.length ?? 0
    let best: BuildImage | undefined
    for (const img of this.backend.allImages()) {
      if (img.parent !== state.imageId) continue
      if ((img.config.history?.length ?? 0) !== parentHistory + 1) continue
      if (img.config.container_config === undefined || canonicalJson(img.config.container_config) !== key) continue
      if (best === undefined || (img.config.created ?? '') > (best.config.created ?? '')) best = img
    }
    if (this.options.cacheFrom.length > 0) {
      const sources = this.cacheSources()
      if (best !== undefined && !sources.some((s) => this.isAncestor(best as BuildImage, s))) best = undefined
      best ??= await this.probeCacheFrom(state, containerConfig, sources)
    }
    if (best !== undefined) this.say(' ---> Using cache\n')
    return best
  }

  private cacheFromImages: BuildImage[] | undefined

  /** The --cache-from images, looked up once per build (a name that is not there is skipped, as dockerd does). */
  private cacheSources (): BuildImage[] {
    this.cacheFromImages ??= this.options.cacheFrom.flatMap((ref) => {
      const img = this.backend.findImage(ref)
      if (img === undefined) log('cache-from %s: no such image, skipped', ref)
      return img !== undefined ? [img] : []
    })
    return this.cacheFromImages
  }

  /** Whether `img` is `of` or one of its parents. */
  private isAncestor (img: BuildImage, of: BuildImage): boolean {
    for (let cur: BuildImage | undefined = of; cur !== undefined; cur = cur.parent !== '' ? this.backend.imageById(cur.parent) : undefined) {
      if (cur.id === img.id) return true
    }
    return false
  }

  /**
   * --cache-from: an image (or one of its parents) whose history continues the current image's with this step. When
   * it has more steps (a loaded image has no intermediate images), the step's image is made from its layers and
   * history up to this step, as dockerd restores one.
   */
  private async probeCacheFrom (state: StageState, containerConfig: ImageRunConfig, sources: BuildImage[]): Promise<BuildImage | undefined> {
    const hist = state.image?.config.history ?? []
    const diffs = state.image?.config.rootfs.diff_ids ?? []
    const createdBy = (containerConfig.Cmd ?? []).join(' ')
    for (const source of sources) {
      let img: BuildImage | undefined = source
      while (img !== undefined) {
        const h = img.config.history ?? []
        const d = img.config.rootfs.diff_ids
        const layersBefore = hist.filter((e) => e.empty_layer !== true).length
        if (h.length > hist.length && hist.every((e, i) => canonicalJson(e) === canonicalJson(h[i])) &&
          diffs.every((x, i) => x === d[i]) && layersBefore === diffs.length && h[hist.length]?.created_by === createdBy) {
          if (h.length === hist.length + 1) return img
          const entry = h[hist.length] as { empty_layer?: boolean }
          const empty = entry.empty_layer === true
          const blob = nextImageConfig({ base: state.image?.config, runConfig: state.runConfig, containerConfig, createdBy, emptyLayer: empty, author: state.maintainer, arch: this.options.arch })
          // the source's own history entries (and time): the next step compares them as they are
          blob.history = h.slice(0, hist.length + 1).map((e) => ({ ...e }))
          if (blob.history[hist.length]?.created !== undefined) blob.created = blob.history[hist.length]?.created as string
          if (!empty) {
            const layer = d[diffs.length]
            if (layer === undefined) return undefined
            blob.rootfs.diff_ids.push(layer)
          }
          return await this.backend.createImage(state.imageId, null, blob)
        }
        img = img.parent !== '' ? this.backend.imageById(img.parent) : undefined
      }
    }
    return undefined
  }

  // ---- commits ----------------------------------------------------------------------------------------------------

  containerConfigFor (state: StageState, cmd: string[]): ImageRunConfig {
    const c = cloneConfig(state.runConfig)
    c.Cmd = cmd
    return { ...c, Image: state.imageId } as ImageRunConfig
  }

  /** A config-only step (CMD, ENV, LABEL…): cached, or a new image with an empty layer. */
  private async commitConfig (state: StageState, comment: string): Promise<void> {
    const cc = this.containerConfigFor(state, [...shellOf(state.runConfig), '#(nop) ', comment])
    const hit = await this.probe(state, cc)
    if (hit !== undefined) { this.adopt(state, hit); return }
    const blob = nextImageConfig({ base: state.image?.config, runConfig: state.runConfig, containerConfig: cc, createdBy: (cc.Cmd as string[]).join(' '), emptyLayer: true, author: state.maintainer, arch: this.options.arch })
    this.adopt(state, await this.backend.createImage(state.imageId, null, blob))
  }

  adopt (state: StageState, img: BuildImage): void {
    state.image = img
    state.imageId = img.id
  }

  // ---- instructions -----------------------------------------------------------------------------------------------

  private async dispatch (state: StageState, n: DockerfileNode): Promise<void> {
    const env = this.substEnv(state)
    const rc = state.runConfig
    switch (n.name) {
      case 'run': await this.run(state, n); return
      case 'copy': case 'add': await copyStep(this, state, n, env); return
      case 'workdir': await this.workdir(state, n, env); return
      case 'env': {
        const pairs: string[] = []
        rc.Env = [...(rc.Env ?? [])]
        for (let i = 0; i < n.args.length; i += 2) {
          const k = this.expand(n.args[i] as string, env, n)
          const v = this.expand(n.args[i + 1] as string, env, n)
          // every value in one ENV sees the variables as they were before it (dockerd's documented rule)
          setEnv(rc.Env, k, v)
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
        checkStopSignal(sig)
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
        rc.Healthcheck = healthConfig(n)
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
    const hit = await this.probe(state, cc)
    if (hit !== undefined) { this.adopt(state, hit); return }
    this.options.signal.throwIfAborted()
    const { id, warnings } = await this.backend.createContainer({
      imageId: state.imageId,
      config: { ...cloneConfig(rc), Cmd: cmd, Entrypoint: [''], Env: [...(rc.Env ?? []), ...argEnv], Healthcheck: { Test: ['NONE'] } },
      hostConfig: { ...this.options.hostConfig, LogConfig: { Type: 'json-file', Config: {} } }
    })
    for (const w of warnings) this.say(` ---> [Warning] ${w}\n`)
    this.say(` ---> Running in ${shortId(id)}\n`)
    let ok = false
    try {
      const code = await this.backend.runContainer(id, (stream, chunk) => {
        const text = chunk.toString('utf8')
        this.say(stream === 'stderr' ? `\u001b[91m${text}\u001b[0m` : text)
      }, this.options.signal)
      // a cancelled build (client gone, /build/cancel) reports that, not the killed container's exit code
      this.options.signal.throwIfAborted()
      if (code !== 0) throw new RunFailed(`The command '${cmd.join(' ')}' returned a non-zero code: ${code}`, code)
      const blob = nextImageConfig({ base: state.image?.config, runConfig: rc, containerConfig: cc, createdBy: saveCmd.join(' '), emptyLayer: false, author: state.maintainer, arch: this.options.arch })
      this.adopt(state, await this.backend.commitContainer(id, state.imageId, blob))
      ok = true
    } finally {
      if (this.options.forceRemove || (this.options.remove && ok) || this.options.signal.aborted) {
        // as dockerd, the line comes first; the removal runs beside the next steps (the build awaits it before it ends)
        this.say(`Removing intermediate container ${shortId(id)}\n`)
        this.removals.push(this.backend.removeContainer(id).catch((err: Error) => {
          this.say(`Error removing intermediate container ${shortId(id)}: ${err.message}\n`)
        }))
      }
    }
  }

  private async workdir (state: StageState, n: DockerfileNode, env: ReadonlyMap<string, string>): Promise<void> {
    const p = this.expand(n.args[0] as string, env, n)
    const rc = state.runConfig
    rc.WorkingDir = posix.normalize(p.startsWith('/') ? p : posix.join('/', rc.WorkingDir ?? '/', p))
    const cc = this.containerConfigFor(state, [...shellOf(rc), `#(nop) WORKDIR ${rc.WorkingDir}`])
    const hit = await this.probe(state, cc)
    if (hit !== undefined) { this.adopt(state, hit); return }
    const layers = state.imageId === '' ? [] : await this.backend.layerDirs(state.imageId)
    // made where the image's symlinks lead (dockerd creates the resolved path), the configured path kept as written
    const real = await resolveInImage(layers, rc.WorkingDir)
    const exists = (await statInLayers(layers, real))?.isDirectory() === true
    const blob = nextImageConfig({ base: state.image?.config, runConfig: rc, containerConfig: cc, createdBy: (cc.Cmd as string[]).join(' '), emptyLayer: exists, author: state.maintainer, arch: this.options.arch })
    if (exists) { this.adopt(state, await this.backend.createImage(state.imageId, null, blob)); return }
    const staging = await this.scratchDir()
    await mkdirIn(staging, real, layers)
    this.adopt(state, await this.backend.createImage(state.imageId, packDir(staging), blob))
  }
}

/** WORKDIR's directory and its parents in the staging tree, with the image's attributes where it has them. */
async function mkdirIn (staging: string, abs: string, layers: string[]): Promise<void> {
  const tree = new EntryTree<WriteAttrs>()
  const now = Math.floor(Date.now() / 1000)
  const parts = abs.split('/').filter((p) => p !== '')
  for (let i = 0; i < parts.length; i++) {
    const st = await statInLayers(layers, '/' + parts.slice(0, i + 1).join('/'))
    tree.add(parts.slice(0, i + 1).join('/'), 'directory', st !== undefined
      ? { mode: st.mode & 0o7777, uid: st.uid, gid: st.gid, mtime: Math.floor(st.mtimeMs / 1000) }
      : { mode: 0o755, uid: 0, gid: 0, mtime: now })
  }
  await writeTree(staging, tree, { attrs: (a) => a as WriteAttrs, isFile: () => false, size: () => 0, bytes: () => Buffer.alloc(0), chunks: async function * () {} })
}
