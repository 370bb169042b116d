// One route table served by the Engine API's real HTTP front on a real Unix socket, over a backend the test
// provides: the route tests' way to reach error paths a real daemon rarely takes (fakes of our own narrow backend
// interfaces only, as moby's router tests; the socket and the HTTP stack stay real).
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { ApiServer } from '../../lib/api/api-server.js'
import type { Route } from '../../lib/http/router.js'
import type { ApiHandler } from '../../lib/http/api-context.js'
import { tmpDir } from './engine.js'

interface TestContextLike { after: (fn: () => Promise<void> | void) => void }

/** Serves `routes` on a Unix socket in a new temp directory until the test ends; the socket's path. */
export async function serveRoutes (t: TestContextLike, ...tables: Array<Array<Route<ApiHandler>>>): Promise<string> {
  const dir = tmpDir('berth-api-')
  const server = new ApiServer()
  for (const routes of tables) server.addRoutes(routes)
  const socket = join(dir, 'api.sock')
  await server.listen({ kind: 'unix', path: socket })
  t.after(async () => {
    await server.close()
    rmSync(dir, { recursive: true, force: true })
  })
  return socket
}

/** A backend method a test does not expect to be called. */
export function notCalled (what: string): () => never {
  return () => { throw new Error(`${what} was not expected to be called`) }
}
