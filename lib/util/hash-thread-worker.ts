// The hashing thread behind hash-thread.ts: sha256 states by id, fed with transferred buffers that go back with
// each acknowledgement to be filled again.
import { parentPort } from 'node:worker_threads'
import { createHash, type Hash } from 'node:crypto'
import type { ToWorker } from './hash-thread.js'

const port = parentPort
if (port !== null) {
  const states = new Map<number, Hash>()
  port.on('message', (m: ToWorker) => {
    if (m.op === 'update') {
      let h = states.get(m.id)
      if (h === undefined) { h = createHash('sha256'); states.set(m.id, h) }
      h.update(new Uint8Array(m.buf, 0, m.len))
      port.postMessage({ op: 'ack', id: m.id, buf: m.buf }, [m.buf])
    } else if (m.op === 'digest') {
      const h = states.get(m.id) ?? createHash('sha256')
      states.delete(m.id)
      port.postMessage({ op: 'digest', id: m.id, hex: h.digest('hex') })
    } else states.delete(m.id)
  })
}
