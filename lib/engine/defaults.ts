// Engine defaults, in a module of their own so the CLI can print them without loading the engine.
export const DEFAULT_DATA_ROOT = '/var/lib/berth'
export const DEFAULT_SOCKET = '/var/run/berth.sock'
