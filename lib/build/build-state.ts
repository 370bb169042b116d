// The builder's shared types: the build's options, one stage's state, and what the step modules need from the
// builder (StepHost).
import { EngineError } from '../errors.js'
import type { ImageRunConfig } from '../image/types.js'
import type { BuildImage, BuildBackend } from './backend.js'
import type { BuildContext } from './build-context.js'
import type { DockerfileNode } from './dockerfile-parser.js'

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

export interface StageState {
  image: BuildImage | undefined
  imageId: string
  runConfig: ImageRunConfig
  maintainer: string
  cmdSet: boolean
  /** ARGs declared in this stage and their values (undefined: declared without a value). */
  args: Map<string, string | undefined>
}

/** What a step module (copy-step.ts) uses of the builder. */
export interface StepHost {
  readonly backend: BuildBackend
  readonly options: BuildOptions
  expand (word: string, env: ReadonlyMap<string, string>, n: DockerfileNode): string
  /** The cached image for this step, or undefined (prints ` ---> Using cache` on a hit). */
  probe (state: StageState, containerConfig: ImageRunConfig): Promise<BuildImage | undefined>
  adopt (state: StageState, img: BuildImage): void
  containerConfigFor (state: StageState, cmd: string[]): ImageRunConfig
  scratchDir (): Promise<string>
  /** `--from=`: an earlier stage (by name or index) or an image (pulled when missing). */
  imageForFrom (from: string): Promise<BuildImage | undefined>
}

export function shortId (id: string): string { return id.replace(/^sha256:/, '').slice(0, 12) }
