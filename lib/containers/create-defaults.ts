// The defaults dockerd writes into a new container's HostConfig at create, so that inspect shows what runs.
import type { NamespaceSettings, ProcessSettings } from './container.js'
import { MASKED_PATHS, READONLY_PATHS } from '../runtime/oci-spec.js'

/** /dev/shm's size when a create names none (dockerd's config.DefaultShmSize). */
export const DEFAULT_SHM_SIZE = 64 * 1024 * 1024

/**
 * The defaults dockerd writes into a new container's HostConfig (adaptContainerSettings, createContainerOSSpecificSettings)
 * so that inspect shows what runs: /dev/shm's 64 MiB, the host cgroup namespace, the masked and read-only /proc and /sys
 * paths of a container that is not privileged; a MemorySwappiness of -1 (the CLI's "unset") is no setting at all.
 */
export function withCreateDefaults<T extends { privileged: boolean, shmSize: number, namespaces: NamespaceSettings, process: ProcessSettings }> (s: T): T {
  const process: ProcessSettings = { ...s.process }
  if (process.memorySwappiness === -1) process.memorySwappiness = null
  if (!s.privileged) {
    process.maskedPaths ??= [...MASKED_PATHS]
    process.readonlyPaths ??= [...READONLY_PATHS]
  }
  return {
    ...s,
    shmSize: s.shmSize > 0 ? s.shmSize : DEFAULT_SHM_SIZE,
    namespaces: { ...s.namespaces, cgroupnsMode: s.namespaces.cgroupnsMode !== '' ? s.namespaces.cgroupnsMode : 'host' },
    process
  }
}
