// Hostile requests for the memory rows: malformed, truncated, wrongly typed and oversized requests over raw Unix
// socket connections (what no well-behaved client sends), the same mix for any engine. Each request is one
// connection; every exchange is bounded in time and the whole run in count.
import net from 'node:net'

const JSON_HEAD = (method: string, path: string, len: number): string =>
  `${method} ${path} HTTP/1.1\r\nHost: docker\r\nContent-Type: application/json\r\nContent-Length: ${len}\r\n\r\n`

function withBody (method: string, path: string, body: Buffer | string): Buffer {
  const b = typeof body === 'string' ? Buffer.from(body) : body
  return Buffer.concat([Buffer.from(JSON_HEAD(method, path, b.length)), b])
}

const BIG_BODY = Buffer.concat([Buffer.from('{"Image":"'), Buffer.alloc(4608 * 1024, 'a'), Buffer.from('"}')])
const BIG_HEADER = `GET /_ping HTTP/1.1\r\nHost: docker\r\nX-Junk: ${'x'.repeat(1100 * 1024)}\r\n\r\n`

/** The mix, indexed by request number: mostly small malformed requests, one in 200 oversized. */
export function hostileRequest (i: number): Buffer | string {
  if (i % 200 === 0) return withBody('POST', '/containers/create', BIG_BODY)
  if (i % 200 === 100) return BIG_HEADER
  switch (i % 14) {
    case 0: return withBody('POST', '/containers/create', '{"Image":')
    case 1: return withBody('POST', '/containers/create', '['.repeat(5000) + ']'.repeat(5000))
    case 2: return withBody('POST', '/containers/create', JSON.stringify({ Image: 5, Cmd: { a: 1 }, HostConfig: 'x', Labels: 7 }))
    case 3: return 'GET /containers/json?all=maybe&filters=%7Bbad HTTP/1.1\r\nHost: docker\r\n\r\n'
    case 4: return `GET /containers/json?filters=${encodeURIComponent(JSON.stringify({ name: ['('.repeat(3000)], label: [{}] }))} HTTP/1.1\r\nHost: docker\r\n\r\n`
    case 5: return 'POST /containers/create HTTP/1.1\r\nHost: docker\r\nContent-Length: abc\r\n\r\n'
    case 6: return 'POST /containers/create HTTP/1.1\r\nHost: docker\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"Image":"bu'
    case 7: return 'GET /v1.99/nope/nope HTTP/1.1\r\nHost: docker\r\n\r\n'
    case 8: return 'FOO /_ping HTTP/1.1\r\nHost: docker\r\n\r\n'
    case 9: return 'POST /containers/create HTTP/1.1\r\nHost: docker\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nzz\r\n{}\r\n0\r\n\r\n'
    case 10: return 'GET /containers/nope/json HTTP/1.1\r\nHost: docker\r\n\r\n'
    case 11: return withBody('POST', '/networks/create', JSON.stringify({ Name: ['x'], Driver: 1, IPAM: 'x' }))
    case 12: return 'GET /images/json?filters=%5B%5D&digests=x HTTP/1.1\r\nHost: docker\r\n\r\n'
    default: return Buffer.from([0x16, 0x03, 0x01, 0x00, 0xff, 0x01, 0x00, 0x00, 0xfb, 0xff, 0xfe, 0x0d, 0x0a, 0x0d, 0x0a])
  }
}

/** Writes one request on a new connection and reads until the server closes (or 5 s pass). */
async function exchange (socket: string, bytes: Buffer | string): Promise<void> {
  await new Promise<void>((resolve) => {
    const s = net.connect(socket)
    const timer = setTimeout(() => { s.destroy() }, 5000)
    s.on('connect', () => { s.end(bytes) })
    s.on('data', () => {})
    s.on('error', () => {})
    s.on('close', () => { clearTimeout(timer); resolve() })
  })
}

/** `count` hostile requests, `parallel` connections at a time. */
export async function sendHostile (socket: string, count: number, parallel = 8): Promise<void> {
  let next = 0
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < count) await exchange(socket, hostileRequest(next++))
  }))
}
