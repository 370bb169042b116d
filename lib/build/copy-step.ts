// COPY and ADD: from the build context straight out of the stored tar (the usual case), or through a staging tree
// when the sources need real files (ADD of an archive or a URL, COPY --from a stage or an image).
import { invalidArgument } from '../errors.js'
import type { DockerfileNode } from './dockerfile-parser.js'
import { flagValue } from './stages.js'
import type { StageState, StepHost } from './build-state.js'
import { shellOf, nextImageConfig } from './step-config.js'
import { resolveSources, sourcesHash } from './copy-sources.js'
import { stageCopy } from './copy-layer.js'
import { resolveContextSources, contextSourcesHash, contextLayer } from './context-copy.js'
import { resolveChown } from './layer-lookup.js'
import { packDir } from '../stream/tar.js'

/** COPY and ADD. */
export async function copyStep (host: StepHost, state: StageState, n: DockerfileNode, env: ReadonlyMap<string, string>): Promise<void> {
  const cmdName = n.name.toUpperCase()
  const words = n.args.map((a) => host.expand(a, env, n))
  const dest = words.pop() as string
  const fromFlag = flagValue(n, 'from')
  const chownFlag = flagValue(n, 'chown')
  const chmodFlag = flagValue(n, 'chmod')
  let chmod: number | undefined
  if (chmodFlag !== undefined) {
    const c = host.expand(chmodFlag, env, n)
    if (!/^[0-7]{3,4}$/.test(c)) throw invalidArgument(`invalid chmod parameter: ${c}. it should be octal string and between 0 and 07777`)
    chmod = parseInt(c, 8)
  }
  const chown = chownFlag !== undefined ? host.expand(chownFlag, env, n) : undefined
  if (fromFlag === undefined && !(n.name === 'add' && await needsFiles(host, words))) {
    await copyFromContext(host, state, cmdName, words, dest, chown, chmod, chmodFlag)
    return
  }
  let root = host.options.contextDir
  let release: (() => Promise<void>) | undefined
  if (fromFlag === undefined) await host.options.context.unpack(host.options.contextDir)
  else {
    const from = host.expand(fromFlag, env, n)
    const img = await host.imageForFrom(from)
    root = await host.scratchDir()
    if (img !== undefined) {
      const mounted = await host.backend.mountImage(img.id, root)
      root = mounted.root
      release = mounted.release
    }
  }
  try {
    const sources = await resolveSources(words, { cmdName, root, allowUrl: n.name === 'add', downloadDir: await host.scratchDir(), signal: host.options.signal })
    const srcHash = sourcesHash(sources)
    const cc = host.containerConfigFor(state, [...shellOf(state.runConfig), copyComment(cmdName, chown, chmodFlag, srcHash, dest)])
    const hit = await host.probe(state, cc)
    if (hit !== undefined) { host.adopt(state, hit); return }
    const layers = state.imageId === '' ? [] : await host.backend.layerDirs(state.imageId)
    const owner = chown !== undefined ? await resolveChown(layers, chown).catch((err: Error) => { throw invalidArgument(err.message) }) : undefined
    const staging = await host.scratchDir()
    await stageCopy({ cmdName, sources, dest, workdir: state.runConfig.WorkingDir ?? '/', layers, staging, scratchDir: async () => await host.scratchDir(), ...(owner !== undefined ? { chown: owner } : {}), ...(chmod !== undefined ? { chmod } : {}), unpackArchives: n.name === 'add' })
    const blob = nextImageConfig({ base: state.image?.config, runConfig: state.runConfig, containerConfig: cc, createdBy: (cc.Cmd as string[]).join(' '), emptyLayer: false, author: state.maintainer, arch: host.options.arch })
    host.adopt(state, await host.backend.createImage(state.imageId, packDir(staging), blob))
  } finally {
    await release?.()
  }
}

/**
 * The step's recorded command (its cache key and history): dockerd's `#(nop) COPY --chown=1:2file:<sha> in /d ` —
 * dockerd writes the --chown flag with no space before the source hash; --chmod keeps one.
 */
function copyComment (cmdName: string, chown: string | undefined, chmodFlag: string | undefined, srcHash: string, dest: string): string {
  const chownPart = chown !== undefined ? `--chown=${chown}` : ''
  const chmodPart = chmodFlag !== undefined ? `${chownPart !== '' ? ' ' : ''}--chmod=${chmodFlag} ` : ''
  return `#(nop) ${cmdName} ${chownPart}${chmodPart}${srcHash} in ${dest} `
}

/** ADD sources that need a real tree: URLs and local archives (unpacked into the layer). */
async function needsFiles (host: StepHost, srcs: readonly string[]): Promise<boolean> {
  if (srcs.some((s) => /^https?:\/\//i.test(s))) return true
  for (const s of resolveContextSources(host.options.context, srcs, 'ADD')) {
    if (s.isDir || s.entry === undefined) continue
    const head = await host.options.context.read(s.entry, 262)
    if ((head[0] === 0x1f && head[1] === 0x8b) || head.subarray(257, 262).toString('latin1') === 'ustar') return true
  }
  return false
}

/** COPY/ADD of context files: checksum from the index, the layer written straight from the stored context. */
async function copyFromContext (host: StepHost, state: StageState, cmdName: string, srcs: string[], dest: string, chown: string | undefined, chmod: number | undefined, chmodFlag: string | undefined): Promise<void> {
  const ctx = host.options.context
  const sources = resolveContextSources(ctx, srcs, cmdName)
  const srcHash = contextSourcesHash(ctx, sources)
  const cc = host.containerConfigFor(state, [...shellOf(state.runConfig), copyComment(cmdName, chown, chmod !== undefined ? chmodFlag : undefined, srcHash, dest)])
  const hit = await host.probe(state, cc)
  if (hit !== undefined) { host.adopt(state, hit); return }
  const layers = state.imageId === '' ? [] : await host.backend.layerDirs(state.imageId)
  const owner = chown !== undefined ? await resolveChown(layers, chown).catch((err: Error) => { throw invalidArgument(err.message) }) : undefined
  const { tar, fill } = await contextLayer(ctx, sources, { cmdName, dest, workdir: state.runConfig.WorkingDir ?? '/', layers, ...(owner !== undefined ? { chown: owner } : {}), ...(chmod !== undefined ? { chmod } : {}) })
  const blob = nextImageConfig({ base: state.image?.config, runConfig: state.runConfig, containerConfig: cc, createdBy: (cc.Cmd as string[]).join(' '), emptyLayer: false, author: state.maintainer, arch: host.options.arch })
  host.adopt(state, await host.backend.createImage(state.imageId, tar, blob, fill))
}
