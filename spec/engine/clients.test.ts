// dockerode's README flows and docker-py's containers.run/logs/stop against the engine.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { PassThrough } from 'node:stream'
import Docker from 'dockerode'
import { startEngine, containerSkipReason, importBusybox } from '../helpers/engine.js'
import { runTool, dockerPySkipReason } from '../helpers/tools.js'

const skip = containerSkipReason()

function collect (s: PassThrough): () => string {
  const chunks: Buffer[] = []
  s.on('data', (d: Buffer) => chunks.push(d))
  return () => Buffer.concat(chunks).toString('utf8')
}

test('dockerode', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const docker = new Docker({ socketPath: socket })

  await t.test('docker.run with a TTY (the README example) streams output and reports StatusCode', async () => {
    const out = new PassThrough()
    const text = collect(out)
    const [data, container] = await docker.run('busybox', ['sh', '-c', 'echo from-run; exit 2'], out) as [{ StatusCode: number }, Docker.Container]
    assert.equal(data.StatusCode, 2)
    assert.equal(text().replace(/\r/g, ''), 'from-run\n')
    await container.remove()
  })

  await t.test('docker.run without TTY demuxes stdout and stderr', async () => {
    const stdout = new PassThrough()
    const stderr = new PassThrough()
    const o = collect(stdout)
    const e = collect(stderr)
    const [data] = await docker.run('busybox', ['sh', '-c', 'echo out; echo err >&2'], [stdout, stderr], { Tty: false, HostConfig: { AutoRemove: true } }) as [{ StatusCode: number }]
    assert.equal(data.StatusCode, 0)
    assert.equal(o(), 'out\n')
    assert.equal(e(), 'err\n')
  })

  await t.test('docker.run resolves after the output arrived (the wait is answered after the attach stream wrote the last output)', async () => {
    // dockerode reads the output on the attach connection and resolves run() on the wait's answer (another
    // connection): the exit must be answered after the attach session wrote the run's output, as with dockerd
    for (let i = 0; i < 10; i++) {
      const stdout = new PassThrough()
      const stderr = new PassThrough()
      const o = collect(stdout)
      const e = collect(stderr)
      const [data] = await docker.run('busybox', ['sh', '-c', `echo out${i}; echo err${i} >&2`], [stdout, stderr], { Tty: false, HostConfig: { AutoRemove: true } }) as [{ StatusCode: number }]
      assert.equal(data.StatusCode, 0)
      assert.equal(`${o()}|${e()}`, `out${i}\n|err${i}\n`, `run ${i}`)
    }
  })

  await t.test('createContainer / start / inspect / logs / stop / remove; listContainers', async () => {
    const c = await docker.createContainer({ Image: 'busybox', Cmd: ['sh', '-c', 'echo x; sleep 60'], name: 'dode' })
    await c.start()
    const info = await c.inspect()
    assert.equal(info.State.Running, true)
    const list = await docker.listContainers()
    assert.ok(list.some((x) => x.Id === c.id))
    await assert.rejects(c.start(), (err: { statusCode?: number }) => err.statusCode === 304)
    await c.stop({ t: 0 })
    const logs = await c.logs({ stdout: true, stderr: true }) as unknown as Buffer
    assert.ok(logs.includes(Buffer.from('x\n')))
    await c.remove()
    await assert.rejects(c.inspect(), (err: { statusCode?: number }) => err.statusCode === 404)
  })

  await t.test('exec with hijack (README exec example)', async () => {
    const c = await docker.createContainer({ Image: 'busybox', Cmd: ['sleep', '60'] })
    await c.start()
    const exec = await c.exec({ Cmd: ['sh', '-c', 'echo exec-out'], AttachStdout: true, AttachStderr: true })
    const stream = await exec.start({ hijack: true, stdin: false })
    const out = new PassThrough()
    const text = collect(out)
    docker.modem.demuxStream(stream, out, new PassThrough())
    await new Promise<void>((resolve) => stream.on('end', () => resolve()))
    assert.equal(text(), 'exec-out\n')
    assert.equal((await exec.inspect()).ExitCode, 0)
    await c.remove({ force: true })
  })

  await t.test('attach with hijack sends stdin; the options body is not stdin', async () => {
    const c = await docker.createContainer({ Image: 'busybox', Cmd: ['cat'], OpenStdin: true, StdinOnce: true })
    const stream = await c.attach({ stream: true, stdin: true, stdout: true, hijack: true })
    const out = new PassThrough()
    const text = collect(out)
    docker.modem.demuxStream(stream, out, new PassThrough())
    await c.start()
    stream.end('typed\n')
    await new Promise<void>((resolve) => stream.on('end', () => resolve()))
    assert.equal(text(), 'typed\n')
    await c.remove({ force: true })
  })

  await t.test('images: listImages, getImage().inspect, tag, remove', async () => {
    const imgs = await docker.listImages()
    assert.ok(imgs.some((i) => i.RepoTags?.includes('busybox:latest')))
    await docker.getImage('busybox').tag({ repo: 'dode', tag: 'v1' })
    const insp = await docker.getImage('dode:v1').inspect()
    assert.ok(insp.RepoTags.includes('dode:v1'))
    const removed = await docker.getImage('dode:v1').remove() as Array<{ Untagged?: string }>
    assert.deepEqual(removed, [{ Untagged: 'dode:v1' }])
  })
})

const pySkip = skip ?? dockerPySkipReason()

test('docker-py', { skip: pySkip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const script = `
import docker, sys
c = docker.DockerClient(base_url='unix://${socket}')
assert c.version()['ApiVersion'] == '1.50'
out = c.containers.run('busybox', ['sh', '-c', 'echo py-out; echo py-err >&2'], remove=True)
assert out == b'py-out\\n', out
ct = c.containers.run('busybox', ['sh', '-c', 'echo bg; sleep 60'], detach=True)
import time
for _ in range(50):
    if b'bg' in ct.logs(): break
    time.sleep(0.05)
assert ct.logs() == b'bg\\n', ct.logs()
ct.stop(timeout=0)
ct.reload()
assert ct.status == 'exited', ct.status
assert ct.wait()['StatusCode'] == 137
ct.remove()
try:
    c.containers.run('busybox', ['sh', '-c', 'exit 3'], remove=True)
    raise SystemExit('expected ContainerError')
except docker.errors.ContainerError as e:
    assert e.exit_status == 3
try:
    c.containers.get('nope')
    raise SystemExit('expected NotFound')
except docker.errors.NotFound:
    pass
assert any('busybox:latest' in i.tags for i in c.images.list())
print('ok')
`
  const r = await runTool('python3', ['-c', script])
  assert.equal(r.status, 0, r.out)
  assert.equal(r.out.trim(), 'ok')
})
