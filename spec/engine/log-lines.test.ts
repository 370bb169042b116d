// One log line per line (issue 23.8): output written in pieces is one record and one timestamp per line for `docker
// logs` (docker-py's frames, `docker logs -t`, service logs), while attach shows every piece at once, as dockerd does.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, importBusybox, request } from '../helpers/engine.js'
import { runTool, dockerPySkipReason } from '../helpers/tools.js'
import { until } from '../helpers/poll.js'
import { frames } from '../helpers/frames.js'

const skip = containerSkipReason()
const PIECES = 'printf abc; sleep 0.3; echo def; printf "hello\\nwor"; sleep 0.3; echo ld; printf tail'

test('log lines', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const docker = async (...args: string[]): Promise<string> => {
    const r = await dockerCli(socket, args)
    assert.equal(r.status, 0, `docker ${args.join(' ')}: ${r.stderr}`)
    return r.stdout
  }

  await t.test('a program writing in pieces: one frame per line, the last unterminated piece once it exits', async () => {
    const c = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['sh', '-c', PIECES + '; printf x >&2'] } })
    const id = (c.json() as { Id: string }).Id
    assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
    await request(socket, 'POST', `/containers/${id}/wait`)
    const all = frames((await request(socket, 'GET', `/containers/${id}/logs?stdout=1&stderr=1`)).body)
    assert.deepEqual(all.filter(([s]) => s === 1), [[1, 'abcdef\n'], [1, 'hello\n'], [1, 'world\n'], [1, 'tail']])
    assert.deepEqual(all.filter(([s]) => s === 2), [[2, 'x']])
    const stamped = frames((await request(socket, 'GET', `/containers/${id}/logs?stdout=1&timestamps=1`)).body).map(([, text]) => text)
    assert.equal(stamped.length, 4)
    for (const [i, text] of ['abcdef\n', 'hello\n', 'world\n', 'tail'].entries()) assert.match(stamped[i] as string, new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{9}Z ${text}$`))
    // tail counts the messages of both streams before filtering, as dockerd's log files do
    assert.deepEqual(frames((await request(socket, 'GET', `/containers/${id}/logs?stdout=1&tail=2`)).body), [[1, 'tail']])
    await request(socket, 'DELETE', `/containers/${id}`)
  })

  await t.test('docker logs -t: one timestamp per line', { skip: hasDockerCli() ? false : 'the docker CLI is not installed' }, async () => {
    const id = (await docker('run', '-d', 'busybox', 'sh', '-c', PIECES)).trim()
    await docker('wait', id)
    const lines = (await docker('logs', '-t', id)).split('\n')
    assert.deepEqual(lines.map((l) => l.replace(/^\S+Z /, '')), ['abcdef', 'hello', 'world', 'tail'])
    const times = lines.map((l) => Date.parse(l.split(' ')[0] as string))
    assert.ok(times[2] as number - (times[1] as number) >= 250, `world ended 0.3 s after hello: ${lines.join(' | ')}`)
    await docker('rm', id)
  })

  await t.test('docker-py: logs demux a program that writes in pieces, a frame per line', { skip: dockerPySkipReason() ?? false }, async () => {
    const script = `
import docker
c = docker.DockerClient(base_url='unix://${socket}')
ct = c.containers.run('busybox', ['sh', '-c', '${PIECES}; printf x >&2'], detach=True)
ct.wait()
assert list(ct.logs(stream=True, stderr=False)) == [b'abcdef\\n', b'hello\\n', b'world\\n', b'tail'], list(ct.logs(stream=True, stderr=False))
assert ct.logs() == b'abcdef\\nhello\\nworld\\ntailx' or ct.logs() == b'abcdef\\nhello\\nworld\\nxtail', ct.logs()
assert ct.logs(stdout=True, stderr=False, tail=-1) == b'abcdef\\nhello\\nworld\\ntail'
lines = c.api.logs(ct.id, timestamps=True, stderr=False).split(b'\\n')
assert len(lines) == 4 and lines[0].endswith(b' abcdef'), lines
ct.remove()
print('ok')
`
    const r = await runTool('python3', ['-c', script])
    assert.equal(r.status, 0, r.out)
    assert.equal(r.out.trim(), 'ok')
  })

  await t.test('attach shows a prompt without newline at once; logs hold it until the line ends', async () => {
    const c = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['sh', '-c', 'printf "name? "; read x; echo "hi $x"'], OpenStdin: true, AttachStdin: true, AttachStdout: true } })
    const id = (c.json() as { Id: string }).Id
    const s = net.connect(socket)
    const got: Buffer[] = []
    s.on('data', (d: Buffer) => got.push(d))
    s.write(`POST /containers/${id}/attach?stream=1&stdin=1&stdout=1 HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n`)
    await until('the upgrade', async () => Buffer.concat(got).includes('\r\n\r\n'))
    assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
    await until('the prompt on the attach stream', async () => Buffer.concat(got).includes('name? '), 10_000)
    assert.deepEqual(frames((await request(socket, 'GET', `/containers/${id}/logs?stdout=1`)).body), [])
    s.write('bob\n')
    await until('the exit', async () => (await request(socket, 'GET', `/containers/${id}/json`)).text.includes('"Status":"exited"'))
    s.destroy()
    assert.deepEqual(frames((await request(socket, 'GET', `/containers/${id}/logs?stdout=1`)).body), [[1, 'name? hi bob\n']])
    await request(socket, 'DELETE', `/containers/${id}`)
  })

  await t.test('docker service logs: one prefixed line per line of a task that writes in pieces', { skip: hasDockerCli() ? false : 'the docker CLI is not installed' }, async () => {
    await docker('swarm', 'init', '--advertise-addr', '127.0.0.1')
    await docker('service', 'create', '-d', '--name', 'pieces', '--restart-condition', 'none', 'busybox', 'sh', '-c', PIECES + '; echo; sleep 600')
    const out = await until('the task\'s lines', async () => {
      const text = (await dockerCli(socket, ['service', 'logs', '--no-task-ids', 'pieces'])).stdout
      return text.split('\n').length >= 5 ? text : undefined
    })
    assert.deepEqual(out.split('\n').filter((l) => l !== '').map((l) => l.replace(/^pieces\.1@\S+\s+\| ?/, '')), ['abcdef', 'hello', 'world', 'tail'])
    await docker('service', 'rm', 'pieces')
    await docker('swarm', 'leave', '--force')
  })
})
