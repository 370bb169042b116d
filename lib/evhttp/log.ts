import { logger } from '../log.js'

/** The one debug namespace of the embedded server: enable with DEBUG=berth:evhttp. */
export const log = logger('evhttp')
