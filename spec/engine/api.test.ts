// The HTTP core: versions, headers, routing, error shapes, body rules. Raw HTTP where bytes matter.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startEngine, request, rawExchange, importBusybox } from '../helpers/engine.js'

test('HTTP core', async (t) => {
  const { socket } = await startEngine(t)

  await t.test('HEAD /_ping carries Api-Version and the other headers', async () => {
    const r = await request(socket, 'HEAD', '/_ping')
    assert.equal(r.status, 200)
    assert.equal(r.headers['api-version'], '1.50')
    assert.equal(r.headers.ostype, 'linux')
    assert.equal(r.headers['docker-experimental'], 'false')
    assert.equal(r.headers.swarm, 'inactive')
    assert.equal(r.headers['cache-control'], 'no-cache, no-store, must-revalidate')
    assert.equal(r.headers.pragma, 'no-cache')
    assert.match(String(r.headers.server ?? ''), /^Docker\/.+ \(linux\)$/)
    assert.equal(r.headers['content-length'], '0')
  })

  await t.test('GET /_ping and /v1.50/_ping answer OK', async () => {
    for (const p of ['/_ping', '/v1.50/_ping', '/v1.24/_ping']) {
      const r = await request(socket, 'GET', p)
      assert.equal(r.status, 200)
      assert.equal(r.text, 'OK')
      assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8')
    }
  })

  await t.test('GET /version has ApiVersion, MinAPIVersion and Engine details as strings', async () => {
    const r = await request(socket, 'GET', '/version')
    const v = r.json() as Record<string, unknown>
    assert.equal(v.ApiVersion, '1.50')
    assert.equal(v.MinAPIVersion, '1.24')
    const engine = (v.Components as Array<{ Name: string, Details: Record<string, unknown> }>).find((c) => c.Name === 'Engine')
    assert.ok(engine)
    for (const val of Object.values(engine.Details)) assert.equal(typeof val, 'string')
    assert.equal(r.headers['content-type'], 'application/json')
    assert.ok(r.text.endsWith('\n'))
  })

  await t.test('GET /info has the fields the CLI decodes, with the right types', async () => {
    const info = (await request(socket, 'GET', '/v1.50/info')).json() as Record<string, unknown>
    for (const k of ['Containers', 'ContainersRunning', 'ContainersPaused', 'ContainersStopped', 'Images', 'NCPU', 'MemTotal']) assert.equal(typeof info[k], 'number', k)
    for (const k of ['ID', 'Driver', 'SystemTime', 'LoggingDriver', 'CgroupDriver', 'KernelVersion', 'OperatingSystem', 'OSType', 'Architecture', 'DockerRootDir', 'Name', 'ServerVersion', 'DefaultRuntime']) assert.equal(typeof info[k], 'string', k)
    assert.ok(!Number.isNaN(Date.parse(info.SystemTime as string)))
    assert.deepEqual(info.Labels, [])
    assert.equal((info.Swarm as Record<string, unknown>).LocalNodeState, 'inactive')
    for (const opt of info.SecurityOptions as string[]) assert.match(opt, /^name=[^,]+(,[^=,]+=[^=,]+)*$/)
  })

  await t.test('too new and too old API versions', async () => {
    const hi = await request(socket, 'GET', '/v1.51/containers/json')
    assert.equal(hi.status, 400)
    assert.equal(hi.headers['content-type'], 'application/json')
    assert.deepEqual(hi.json(), { message: 'client version 1.51 is too new. Maximum supported API version is 1.50' })
    const lo = await request(socket, 'GET', '/v1.23/containers/json')
    assert.equal(lo.status, 400)
    assert.equal(lo.headers['content-type'], 'text/plain; charset=utf-8')
    assert.equal(lo.text, 'client version 1.23 is too old. Minimum supported API version is 1.24, please upgrade your client to a newer version\n')
    assert.equal((await request(socket, 'GET', '/v1.9/_ping')).status, 400, 'versions compare numerically: 1.9 < 1.24')
  })

  await t.test('unknown routes and wrong methods give 404 page not found', async () => {
    for (const [m, p] of [['GET', '/nope'], ['GET', '/v1.50/nope'], ['POST', '/_ping'], ['GET', '/vabc/_ping'], ['PATCH', '/containers/json']]) {
      const r = await request(socket, m as string, p as string)
      assert.equal(r.status, 404, `${m as string} ${p as string}`)
      assert.deepEqual(r.json(), { message: 'page not found' })
      assert.equal(r.headers['content-type'], 'application/json')
    }
    const del = await request(socket, 'DELETE', '/containers/json')
    assert.equal(del.status, 404)
    assert.deepEqual(del.json(), { message: 'No such container: json' })
  })

  await t.test('OPTIONS answers 200 empty', async () => {
    const r = await request(socket, 'OPTIONS', '/containers/json')
    assert.equal(r.status, 200)
    assert.equal(r.body.length, 0)
  })

  await t.test('create: malformed JSON, wrong Content-Type, empty body', async () => {
    const bad = await request(socket, 'POST', '/containers/create', { raw: Buffer.from('{"Image":'), headers: { 'Content-Type': 'application/json' } })
    assert.equal(bad.status, 400)
    assert.match((bad.json() as { message: string }).message, /^invalid JSON/)
    const ct = await request(socket, 'POST', '/containers/create', { raw: Buffer.from('{"Image":"busybox"}'), headers: { 'Content-Type': 'application/x-www-form-urlencoded' } })
    assert.equal(ct.status, 400)
    assert.equal((ct.json() as { message: string }).message, "unsupported Content-Type header (application/x-www-form-urlencoded): must be 'application/json'")
    const empty = await request(socket, 'POST', '/containers/create')
    assert.equal(empty.status, 400)
    const arr = await request(socket, 'POST', '/containers/create', { body: [1, 2] })
    assert.equal(arr.status, 400)
  })

  await t.test('a 50 MB body is refused with 413 and the daemon keeps serving', async () => {
    const big = Buffer.alloc(50 * 1024 * 1024, 0x20)
    const r = await request(socket, 'POST', '/containers/create', { raw: big, headers: { 'Content-Type': 'application/json' } }).catch((err: Error) => ({ status: -1, text: err.message }))
    assert.ok(r.status === 413 || r.status === -1, `status ${r.status}`)
    assert.equal((await request(socket, 'GET', '/_ping')).status, 200)
  })

  await t.test('create: bad names, missing image, bad field types', async () => {
    await importBusybox(socket)
    const badName = await request(socket, 'POST', '/containers/create?name=bad%20name', { body: { Image: 'busybox' } })
    assert.equal(badName.status, 400)
    assert.equal((badName.json() as { message: string }).message, 'Invalid container name (bad name), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed')
    const missing = await request(socket, 'POST', '/containers/create', { body: { Image: 'nosuchimage:1' } })
    assert.equal(missing.status, 404)
    assert.equal((missing.json() as { message: string }).message, 'No such image: nosuchimage:1')
    const missingDefault = await request(socket, 'POST', '/containers/create', { body: { Image: 'docker.io/library/nosuch' } })
    assert.equal((missingDefault.json() as { message: string }).message, 'No such image: nosuch:latest')
    const badType = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Tty: 'yes' } })
    assert.equal(badType.status, 400)
    const invalidAndMissing = await request(socket, 'POST', '/containers/create?name=x%2Fy', { body: { Image: 'nosuch' } })
    assert.equal(invalidAndMissing.status, 400, 'validation comes before the image lookup, so the CLI does not pull')
    const noImage = await request(socket, 'POST', '/containers/create', { body: { Cmd: ['true'] } })
    assert.equal(noImage.status, 400)
  })

  await t.test('unknown container gives 404 with the reference as given', async () => {
    for (const [m, p] of [['GET', '/containers/nope/json'], ['POST', '/containers/nope/start'], ['POST', '/containers/nope/wait'], ['GET', '/containers/nope/logs?stdout=1']]) {
      const r = await request(socket, m as string, p as string)
      assert.equal(r.status, 404)
      assert.deepEqual(r.json(), { message: 'No such container: nope' })
    }
  })

  await t.test('a garbage request line gets a 400 and the connection closes', async () => {
    const got = await rawExchange(socket, 'GARBAGE\r\n\r\n')
    assert.match(got.toString('latin1'), /^HTTP\/1\.1 400/)
    assert.equal((await request(socket, 'GET', '/_ping')).status, 200)
  })

  await t.test('lists are [] not null', async () => {
    assert.equal((await request(socket, 'GET', '/containers/json')).text, '[]\n')
  })

  await t.test('invalid filters are 400', async () => {
    const r = await request(socket, 'GET', '/containers/json?filters=garbage')
    assert.equal(r.status, 400)
    const k = await request(socket, 'GET', '/containers/json?filters=' + encodeURIComponent('{"nope":["x"]}'))
    assert.equal(k.status, 400)
    assert.deepEqual(k.json(), { message: "invalid filter 'nope'" })
  })
})
