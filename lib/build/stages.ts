// Parsed nodes → build stages, with every instruction checked before anything runs (argument counts, flags, the
// BuildKit-only options refused), so a bad Dockerfile fails before its first step as it does with dockerd.
import { invalidArgument } from '../errors.js'
import { parseError, type Dockerfile, type DockerfileNode } from './dockerfile-parser.js'

export interface Stage {
  /** `FROM <base> [AS name]`: base as written (expanded later with the meta ARGs). */
  from: DockerfileNode
  base: string
  name: string | undefined
  platform: string | undefined
  index: number
  commands: DockerfileNode[]
}

export interface BuildPlan {
  metaArgs: DockerfileNode[]
  stages: Stage[]
  /** Number of `Step n/m` lines: meta ARGs, FROMs and commands. */
  totalSteps: number
}

const BUILDKIT_HINT = 'requires BuildKit. Refer to https://docs.docker.com/go/buildkit/ to learn how to build images with BuildKit enabled'
const BUILDKIT_FLAGS: Readonly<Record<string, readonly string[]>> = {
  run: ['mount', 'network', 'security'],
  copy: ['link', 'parents', 'exclude'],
  add: ['link', 'checksum', 'keep-git-dir', 'exclude']
}
const ALLOWED_FLAGS: Readonly<Record<string, readonly string[]>> = {
  from: ['platform'],
  copy: ['from', 'chown', 'chmod'],
  add: ['chown', 'chmod'],
  healthcheck: ['interval', 'timeout', 'start-period', 'start-interval', 'retries']
}

export function flagName (flag: string): string {
  const eq = flag.indexOf('=')
  return eq === -1 ? flag : flag.slice(0, eq)
}

/** The value of `--name=value`, or undefined when the flag is absent. */
export function flagValue (node: DockerfileNode, name: string): string | undefined {
  let v: string | undefined
  for (const f of node.flags) if (flagName(f) === name) v = f.includes('=') ? f.slice(f.indexOf('=') + 1) : 'true'
  return v
}

function checkNode (n: DockerfileNode): void {
  const upper = n.name.toUpperCase()
  const fail = (msg: string): never => { throw parseError(n.startLine, msg) }
  for (const f of n.flags) {
    const name = flagName(f)
    if (BUILDKIT_FLAGS[n.name]?.includes(name) === true) fail(`the --${name} option ${BUILDKIT_HINT}`)
    if (ALLOWED_FLAGS[n.name]?.includes(name) !== true) fail(`Unknown flag: ${name}`)
  }
  const count = n.args.length
  switch (n.name) {
    case 'from':
      if (count !== 1 && !(count === 3 && (n.args[1] as string).toLowerCase() === 'as')) fail('FROM requires either one or three arguments')
      break
    case 'copy': case 'add':
      if (count < 2) fail(`${upper} requires at least two arguments${count === 1 ? ', but only one was provided. Destination could not be determined' : ''}`)
      break
    case 'run': case 'entrypoint': case 'cmd': case 'expose': case 'volume': case 'label': case 'env': case 'arg': case 'onbuild':
      if (count === 0 && !(n.name === 'cmd' || n.name === 'entrypoint' || (n.name === 'run' && n.json))) fail(`${upper} requires at least one argument`)
      if (n.name === 'volume' && n.args.some((a) => a.trim() === '')) fail('VOLUME specified can not be an empty string')
      break
    case 'shell':
      if (!n.json) fail('SHELL requires the arguments to be in JSON form')
      if (count === 0) fail('SHELL requires at least one argument')
      break
    case 'workdir': case 'user': case 'maintainer': case 'stopsignal':
      if (count !== 1) fail(`${upper} requires exactly one argument`)
      break
    case 'healthcheck':
      if (count === 0) fail('HEALTHCHECK requires at least one argument')
      if (n.args[0] === 'CMD' && count < 2) fail('Missing command after HEALTHCHECK CMD')
      break
  }
  if (n.next !== undefined) checkNode(n.next)
}

export function planBuild (df: Dockerfile): BuildPlan {
  const metaArgs: DockerfileNode[] = []
  const stages: Stage[] = []
  for (const n of df.nodes) {
    checkNode(n)
    if (n.name === 'from') {
      const name = n.args.length === 3 ? (n.args[2] as string).toLowerCase() : undefined
      if (name !== undefined) {
        if (!/^[a-z][a-z0-9-_.]*$/.test(name)) throw parseError(n.startLine, `invalid name for build stage: "${n.args[2] as string}", name can't start with a number or contain symbols`)
        if (stages.some((s) => s.name === name)) throw parseError(n.startLine, `duplicate name ${name}`)
      }
      stages.push({ from: n, base: n.args[0] as string, name, platform: flagValue(n, 'platform'), index: stages.length, commands: [] })
      continue
    }
    const cur = stages[stages.length - 1]
    if (cur === undefined) {
      if (n.name !== 'arg') throw parseError(n.startLine, 'no build stage in current context')
      metaArgs.push(n)
      continue
    }
    cur.commands.push(n)
  }
  if (stages.length === 0) throw invalidArgument('failed to parse Dockerfile: file with no instructions')
  let totalSteps = metaArgs.length + stages.length
  for (const s of stages) totalSteps += s.commands.length
  return { metaArgs, stages, totalSteps }
}

/** The stages a build of `target` needs (all up to the target; an unknown target is an error). */
export function stagesUpTo (plan: BuildPlan, target: string): Stage[] {
  if (target === '') return plan.stages
  const i = plan.stages.findIndex((s) => s.name === target.toLowerCase())
  if (i === -1) throw invalidArgument(`failed to reach build target ${target} in Dockerfile`)
  return plan.stages.slice(0, i + 1)
}
