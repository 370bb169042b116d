// Berth's public surface for embedders.
export { createEngine, Engine, DEFAULT_DATA_ROOT, DEFAULT_SOCKET } from './engine/engine.js'
export type { EngineOptions } from './engine/engine.js'
export { EngineError, isEngineError, STATUS_BY_KIND } from './errors.js'
export type { ErrorKind } from './errors.js'
export { StdWriter, Demuxer, frame, demuxAll } from './stream/stdcopy.js'
export { API_VERSION, MIN_API_VERSION } from './api/api-version.js'

// Registry service (lib/registry/)
export { createRegistry, Registry, collectGarbage, DEFAULT_REGISTRY_LISTEN } from './registry/service.js'
export type { RegistryOptions } from './registry/service.js'
export type { GcOptions, GcResult } from './registry/gc.js'
export type { StorageDriver, UploadWriter } from './registry/storage/driver.js'
