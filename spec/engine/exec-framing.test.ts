// Exec framing follows the start request's Tty, as dockerd's does (issue 23.10): the process gets a terminal when the
// exec was created with Tty, the stream is raw when the start asks for Tty and multiplexed otherwise (docker-py's
// demux tests, which create and start with different values).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startEngine, containerSkipReason, importBusybox } from '../helpers/engine.js'
import { runTool, dockerPySkipReason } from '../helpers/tools.js'

const skip = containerSkipReason() ?? dockerPySkipReason()

test('exec framing follows the start request\'s Tty (docker-py demux)', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const script = `
import docker
c = docker.DockerClient(base_url='unix://${socket}')
api = c.api
ct = c.containers.run('busybox', ['sleep', '60'], detach=True)
def run(create_tty, start_tty):
    e = api.exec_create(ct.id, ['sh', '-c', 'echo out; echo err >&2'], tty=create_tty)
    return api.exec_start(e['Id'], tty=start_tty, demux=True)
# created with a terminal, started without: the terminal's output (CR LF) framed as stdout
assert run(True, False) == (b'out\\r\\nerr\\r\\n', None), run(True, False)
# created without, started with: raw bytes, and no stderr at all (dockerd gives such a start no stderr writer)
assert run(False, True) == (b'out\\n', None), run(False, True)
assert run(False, False) == (b'out\\n', b'err\\n'), run(False, False)
assert run(True, True) == (b'out\\r\\nerr\\r\\n', None), run(True, True)
assert ct.exec_run(['sh', '-c', 'echo a; echo b >&2'], demux=True).output == (b'a\\n', b'b\\n')
assert ct.exec_run(['sh', '-c', 'echo a; echo b >&2'], tty=True, demux=True).output == (b'a\\r\\nb\\r\\n', None)
e = api.exec_create(ct.id, ['sh', '-c', 'stty size'], tty=True)
assert api.exec_inspect(e['Id'])['ProcessConfig']['tty'] is True
ct.remove(force=True)
print('ok')
`
  const r = await runTool('python3', ['-c', script])
  assert.equal(r.status, 0, r.out)
  assert.equal(r.out.trim(), 'ok')
})
