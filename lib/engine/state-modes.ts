// The modes of the engine's data root and exec root (see lib/util/private-modes.ts for why), checked and repaired at
// every start before any state is read: a data root from an earlier Berth (0711 root, 0755 directories, world-readable
// OCI specs, logs and blobs) or one chmodded by hand is brought back to these.
//
//   <data-root>/                       0700   berth.lock 0600; .modes (the layout version below, once repaired)
//   ├── content/ image/ network/ swarm/ distribution/ build/    0700, everything below 0700/0600
//   ├── layers/<chain>/                0700   meta.json 0600; diff/ is the image's tree (left as the image has it)
//   ├── containers/<id>/               0700   container.json, config.json 0600; container.log(.N) 0640;
//   │                                         hosts, hostname, resolv.conf 0644 (bound into the container);
//   │                                         work/ 0700; diff/ rootfs/ shm/ left (the container's own trees)
//   └── volumes/<name>/                0700   volume.json 0600; _data/ left (the container's user must use it)
//   <exec-root>/                       0700   berth.lock 0600; <id16>/ (a container's monitor state) 0700/0600
//                                              all through; runtime/ (runc's), netns/, swarm-files/ 0700 (inside:
//                                              runc's own modes, namespace mounts, the task files' modes)
//
// The top of both roots (the roots and their first entries) is checked at every start: that alone keeps host users
// out. The whole tree is walked when `<data-root>/.modes` does not name this layout version (an upgrade, a new data
// root): once per data root, not on every restart.
import { repairModes, modesCurrent, markModes, topOnly, PRIVATE_DIR, PRIVATE_FILE, LOG_FILE, CONTAINER_READ_FILE, PRIVATE_ENTRY, PRIVATE_TREE, type ModeRule, type RepairReport } from '../util/private-modes.js'

/** Bumped when the rules below change what an existing data root must be given. */
export const MODES_VERSION = 1

const LOG_NAME = /^container\.log(\.\d+)?$/
const CONTAINER_READ = new Set(['hosts', 'hostname', 'resolv.conf'])
/**
 * The container's own trees and the mounts made there: never touched. diff/ is the root directory of the container's
 * `/` (overlayfs takes the merged root's mode from the upper one), rootfs/ is that mount, shm/ a tmpfs of its own.
 */
const CONTAINER_TREES = new Set(['diff', 'rootfs', 'shm'])

const containerDir: ModeRule = {
  dir: PRIVATE_DIR,
  child: (name) => {
    if (CONTAINER_TREES.has(name)) return undefined
    if (LOG_NAME.test(name)) return { file: LOG_FILE }
    if (CONTAINER_READ.has(name)) return { file: CONTAINER_READ_FILE }
    // work/ is overlayfs' own (its inner work/ is the kernel's): the directory only
    return PRIVATE_ENTRY
  }
}

const layerDir: ModeRule = { dir: PRIVATE_DIR, child: (name) => name === 'diff' ? undefined : PRIVATE_TREE }

const volumeDir: ModeRule = { dir: PRIVATE_DIR, child: (name) => name === '_data' || name.startsWith('.copyup-') ? undefined : PRIVATE_ENTRY }

/** The data root: `deep` false checks the root and its first entries only. */
function dataRootRule (deep: boolean): ModeRule {
  const top = (rule: ModeRule): ModeRule => deep ? rule : topOnly(rule)
  return {
    dir: PRIVATE_DIR,
    child: (name) => {
      switch (name) {
        case 'containers': return top({ dir: PRIVATE_DIR, child: () => containerDir })
        case 'layers': return top({ dir: PRIVATE_DIR, child: () => layerDir })
        case 'volumes': return top({ dir: PRIVATE_DIR, child: () => volumeDir })
        default: return top(PRIVATE_TREE)
      }
    }
  }
}

const monitorState: ModeRule = { dir: PRIVATE_DIR, file: PRIVATE_FILE, child: () => monitorState }

function execRootRule (deep: boolean): ModeRule {
  return {
    dir: PRIVATE_DIR,
    child: (name) => {
      // subpaths/ holds mounts of volume directories (lib/volumes/subpath-mounts.ts): never walked into
      if (name === 'runtime' || name === 'netns' || name === 'swarm-files' || name === 'subpaths') return { dir: PRIVATE_DIR }
      if (name === 'berth.lock') return { file: PRIVATE_FILE }
      return deep ? monitorState : PRIVATE_ENTRY
    }
  }
}

/**
 * Repairs the modes of the data root and the exec root (the exec root may sit inside the data root, `run/` by
 * default: it is then walked as the exec root, never as data). Call with both roots locked, before anything reads
 * them. The paths are absolute and normalised (path.resolve).
 */
export async function secureEngineState (dataRoot: string, execRoot: string): Promise<RepairReport> {
  const deep = !await modesCurrent(dataRoot, MODES_VERSION)
  const report: RepairReport = { changed: [], refused: [] }
  if (execRoot === dataRoot) {
    await repairModes(dataRoot, dataRootRule(deep), { report })
  } else {
    await repairModes(dataRoot, dataRootRule(deep), { report, skip: [execRoot] })
    await repairModes(execRoot, execRootRule(deep), { report, skip: [dataRoot] })
  }
  if (deep) await markModes(dataRoot, MODES_VERSION)
  return report
}
