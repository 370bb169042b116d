// Attach and exec on raw sockets: the exact 101 header block, frames, half-close, stdin, the plain 200 form.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { startEngine, request, importBusybox, createContainer, containerSkipReason, rawExchange } from '../helpers/engine.js'
import { demuxAll } from '../../lib/stream/stdcopy.js'

const skip = containerSkipReason()
const UPGRADED = 'HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.multiplexed-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n'

function attachRequest (id: string, query: string, extra = ''): string {
  return `POST /v1.50/containers/${id}/attach?${query} HTTP/1.1\r\nHost: api.moby.localhost\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n${extra}\r\n`
}

test('attach and exec', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)

  await t.test('docker run flow: attach (101, immediate half-close) → wait → start → frames → close', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['echo', 'hi'], AttachStdout: true, AttachStderr: true })
    const attached = rawExchange(socket, attachRequest(id, 'stderr=1&stdout=1&stream=1'), { halfClose: true })
    // wait headers must arrive before start is called
    const waitSock = net.connect(socket)
    const waitHeaders = new Promise<string>((resolve) => {
      let got = ''
      waitSock.on('data', (d: Buffer) => { got += d.toString('latin1'); if (got.includes('\r\n\r\n')) resolve(got) })
    })
    let waitAll = ''
    waitSock.on('data', (d: Buffer) => { waitAll += d.toString('latin1') })
    const waitEnded = new Promise<void>((resolve) => waitSock.on('close', () => resolve()))
    waitSock.write(`POST /v1.50/containers/${id}/wait?condition=next-exit HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`)
    assert.match(await waitHeaders, /^HTTP\/1\.1 200 OK\r\n/)
    assert.equal((await request(socket, 'POST', `/v1.50/containers/${id}/start`)).status, 204)
    const got = await attached
    const text = got.toString('latin1')
    assert.ok(text.startsWith(UPGRADED), JSON.stringify(text.slice(0, 200)))
    const frames = got.subarray(UPGRADED.length)
    assert.deepEqual([...frames], [1, 0, 0, 0, 0, 0, 0, 3, ...Buffer.from('hi\n')])
    await waitEnded
    assert.match(waitAll, /\{"Error":null,"StatusCode":0\}/)
  })

  await t.test('stdin with StdinOnce: data then half-close reaches cat, output comes back, socket closes', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['cat'], OpenStdin: true, StdinOnce: true, AttachStdin: true, AttachStdout: true, AttachStderr: true })
    const s = net.connect(socket)
    const chunks: Buffer[] = []
    s.on('data', (d: Buffer) => chunks.push(d))
    const closed = new Promise<void>((resolve) => s.on('close', () => resolve()))
    s.on('end', () => s.end())
    await new Promise<void>((resolve) => s.on('connect', () => resolve()))
    s.write(attachRequest(id, 'stderr=1&stdin=1&stdout=1&stream=1'))
    await new Promise<void>((resolve) => { const check = (): void => { if (Buffer.concat(chunks).includes('\r\n\r\n')) { s.off('data', check); resolve() } }; s.on('data', check); check() })
    s.write('line1\nline2\n')
    s.end()
    assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
    await closed
    const got = Buffer.concat(chunks)
    const body = got.subarray(got.indexOf('\r\n\r\n') + 4)
    assert.equal(demuxAll(body).stdout.toString(), 'line1\nline2\n')
    const st = (await request(socket, 'POST', `/containers/${id}/wait`)).json() as { StatusCode: number }
    assert.equal(st.StatusCode, 0)
  })

  await t.test('plain 200 form (curl, dockerode without hijack) reads until close', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sh', '-c', 'sleep 0.2; echo plain; echo err >&2'] })
    const attached = rawExchange(socket, `POST /containers/${id}/attach?stream=1&stdout=1&stderr=1 HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n`)
    await new Promise((resolve) => setTimeout(resolve, 100))
    await request(socket, 'POST', `/containers/${id}/start`)
    const got = await attached
    const head = 'HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\n'
    assert.ok(got.toString('latin1').startsWith(head), got.toString('latin1').slice(0, 120))
    const d = demuxAll(got.subarray(head.length))
    assert.equal(d.stdout.toString(), 'plain\n')
    assert.equal(d.stderr.toString(), 'err\n')
  })

  await t.test('attach to an unknown container: JSON 404', async () => {
    const got = (await rawExchange(socket, attachRequest('nope', 'stream=1&stdout=1'))).toString('latin1')
    assert.match(got, /^HTTP\/1\.1 404 /)
    assert.match(got, /No such container: nope/)
  })

  await t.test('attach with logs=1 replays, tty gives raw bytes', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sh', '-c', 'echo one'], Tty: true })
    await request(socket, 'POST', `/containers/${id}/start`)
    await request(socket, 'POST', `/containers/${id}/wait`)
    const got = await rawExchange(socket, attachRequest(id, 'logs=1&stdout=1&stream=0'))
    const text = got.toString('latin1')
    assert.ok(text.startsWith('HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n'))
    assert.ok(text.endsWith('\r\n\r\none\r\n'), JSON.stringify(text))
  })

  await t.test('exec: create, start hijacked, inspect exit code; 409 when not running', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sleep', '30'] })
    const notRunning = await request(socket, 'POST', `/containers/${id}/exec`, { body: { Cmd: ['true'] } })
    assert.equal(notRunning.status, 409)
    await request(socket, 'POST', `/containers/${id}/start`)
    const ex = await request(socket, 'POST', `/containers/${id}/exec`, { body: { Cmd: ['sh', '-c', 'echo $X; echo e >&2; exit 3'], Env: ['X=from-exec'], AttachStdout: true, AttachStderr: true } })
    assert.equal(ex.status, 201)
    const execId = (ex.json() as { Id: string }).Id
    // before its start: neither running nor exited (dockerd: Running false, ExitCode null, Pid 0)
    const before = (await request(socket, 'GET', `/exec/${execId}/json`)).json() as { ExitCode: number | null, Running: boolean, Pid: number }
    assert.deepEqual([before.Running, before.ExitCode, before.Pid], [false, null, 0])
    const body = '{"Detach":false,"Tty":false}'
    const got = await rawExchange(socket, `POST /v1.50/exec/${execId}/start HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`, { halfClose: false })
    const text = got.toString('latin1')
    assert.match(text, /^HTTP\/1\.1 101 UPGRADED\r\nContent-Type: application\/vnd\.docker\.multiplexed-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nApi-Version: 1\.50\r\n/)
    const d = demuxAll(got.subarray(got.indexOf('\r\n\r\n') + 4))
    assert.equal(d.stdout.toString(), 'from-exec\n')
    assert.equal(d.stderr.toString(), 'e\n')
    const info = (await request(socket, 'GET', `/exec/${execId}/json`)).json() as { ExitCode: number, Running: boolean, ContainerID: string }
    assert.equal(info.ExitCode, 3)
    assert.equal(info.Running, false)
    assert.equal(info.ContainerID, id)
    assert.equal((await request(socket, 'GET', '/exec/nope/json')).status, 404)
    await request(socket, 'DELETE', `/containers/${id}?force=1`)
  })

  await t.test('exec stdin: the start body in a separate packet, then stdin and half-close reach cat', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sleep', '30'] })
    await request(socket, 'POST', `/containers/${id}/start`)
    for (const split of [true, false]) {
      const ex = await request(socket, 'POST', `/containers/${id}/exec`, { body: { Cmd: ['cat'], AttachStdin: true, AttachStdout: true, AttachStderr: true } })
      const execId = (ex.json() as { Id: string }).Id
      const body = '{"Detach":false,"Tty":false}'
      const s = net.connect(socket)
      const chunks: Buffer[] = []
      s.on('data', (d: Buffer) => chunks.push(d))
      const closed = new Promise<void>((resolve) => s.on('close', () => resolve()))
      await new Promise<void>((resolve) => s.on('connect', () => resolve()))
      const head = `POST /v1.50/exec/${execId}/start HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`
      if (split) {
        // as the docker CLI sometimes sends it: the body arrives after the server has parsed the headers
        s.write(head)
        await new Promise((resolve) => setTimeout(resolve, 50))
        s.write(body)
      } else s.write(head + body)
      await new Promise<void>((resolve) => { const check = (): void => { if (Buffer.concat(chunks).includes('\r\n\r\n')) { s.off('data', check); resolve() } }; s.on('data', check); check() })
      s.write('piped\n')
      s.end()
      await closed
      const got = Buffer.concat(chunks)
      assert.equal(demuxAll(got.subarray(got.indexOf('\r\n\r\n') + 4)).stdout.toString(), 'piped\n', `split=${String(split)}`)
      assert.equal(((await request(socket, 'GET', `/exec/${execId}/json`)).json() as { ExitCode: number }).ExitCode, 0)
    }
    // a client that goes away without a half-close: the process's stdin closes too, and cat ends
    const ex = await request(socket, 'POST', `/containers/${id}/exec`, { body: { Cmd: ['cat'], AttachStdin: true, AttachStdout: true } })
    const execId = (ex.json() as { Id: string }).Id
    const body = '{"Detach":false,"Tty":false}'
    const s = net.connect(socket)
    const got: Buffer[] = []
    s.on('data', (d: Buffer) => got.push(d))
    s.write(`POST /v1.50/exec/${execId}/start HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
    await new Promise<void>((resolve) => { const check = (): void => { if (Buffer.concat(got).includes('\r\n\r\n')) { s.off('data', check); resolve() } }; s.on('data', check); check() })
    s.write('partial input\n')
    await new Promise((resolve) => setTimeout(resolve, 100))
    s.destroy()
    // the exec counts as running from its start request on (as in dockerd), even if the client left before its
    // process was set up: Running turns false only with its exit code
    let info: { Running: boolean, ExitCode: number | null } = { Running: true, ExitCode: null }
    for (let i = 0; i < 200 && info.Running; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      info = (await request(socket, 'GET', `/exec/${execId}/json`)).json() as typeof info
    }
    assert.deepEqual([info.Running, info.ExitCode], [false, 0], 'cat saw the end of its input')
    await request(socket, 'DELETE', `/containers/${id}?force=1`)
  })
})
