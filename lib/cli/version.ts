// The package's version, read from its package.json (the CLI's --version, the start line).
import { createRequire } from 'node:module'

export const BERTH_VERSION: string = (createRequire(import.meta.url)('../../../package.json') as { version: string }).version
