// The Date header of every reply, written by us instead of Node. Node's ServerResponse formats it with
// Date.prototype.toUTCString, which looks up the local time zone's offset first and so initialises ICU's time-zone
// support at a server's first reply (~1 MiB of a daemon's RSS: lib/util/time.ts, tools/bench/README.md "Memory").
// The same field (IMF-fixdate, one string per second), set before the handlers run: a handler's own Date replaces it.
// (A ServerResponse subclass overriding writeHead cost ~5 us of CPU per `_ping` and grew the RSS under load: measured.)
import type http from 'node:http'
import { httpDate } from '../util/time.js'

/** Makes the server's replies carry httpDate's Date header instead of Node's. Register before the handlers. */
export function dateReplies (server: http.Server): void {
  // the last second's header, per server (no module state)
  let second = -1
  let value = ''
  server.on('request', function dateOnRequest (_req: http.IncomingMessage, res: http.ServerResponse) {
    const ms = Date.now()
    const s = Math.floor(ms / 1000)
    if (s !== second) { second = s; value = httpDate(ms) }
    res.sendDate = false
    res.setHeader('Date', value)
  })
}
