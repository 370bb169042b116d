import createDebug from 'debug'

/** The one debug namespace of the embedded server: enable with DEBUG=berth:evhttp. */
export const log = createDebug('berth:evhttp')
