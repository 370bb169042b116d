// The daemon under a service manager: a listening socket passed as systemd passes it (fd 3, LISTEN_FDS, LISTEN_PID
// = the daemon's pid, LISTEN_FDNAMES) served with -H fd://; READY=1 and STOPPING=1 sent to NOTIFY_SOCKET (a Unix
// datagram socket, read here by python3 as systemd would); --group on the Unix sockets the daemon makes.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { cleanupDaemon, containerSkipReason, createContainer, daemonNetworkArgs, importBusybox, request, tmpDir, uniqueNetworkOptions } from '../helpers/engine.js'
import { MAIN, pingable, startProc } from './helpers.js'

const PYTHON = '/usr/bin/python3'
const skip = containerSkipReason() ?? (spawnSync(PYTHON, ['--version']).status === 0 ? null : 'python3 is not installed')

// systemd's socket activation: the socket made and listening, moved to fd 3, the variables set for the pid that
// execs the daemon (exec keeps the pid)
const ACTIVATE = `
import os, socket, sys
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(128)
if s.fileno() != 3:
    os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
os.environ["LISTEN_FDS"] = "1"
os.environ["LISTEN_PID"] = str(os.getpid())
os.environ["LISTEN_FDNAMES"] = "berth.socket"
os.execv(sys.argv[2], sys.argv[2:])
`

// the service manager's notification socket: prints each datagram's text, closes the descriptors it carries (as
// systemd does once it processed what came before a BARRIER=1)
const RECEIVE = `
import array, os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print("bound", flush=True)
while True:
    data, anc, flags, addr = s.recvmsg(4096, socket.CMSG_SPACE(16 * 4))
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds = array.array("i")
            fds.frombytes(payload[:len(payload) - len(payload) % 4])
            for fd in fds:
                os.close(fd)
    print(data.decode().replace("\\n", " ").strip(), flush=True)
`

describe('systemd integration', { skip: skip ?? false }, () => {
  it('serves a socket passed with LISTEN_FDS (-H fd://), notifies READY=1 and STOPPING=1, and gives its own sockets --group', async (t) => {
    const dir = tmpDir()
    const net = uniqueNetworkOptions()
    const activated = join(dir, 'activated.sock')
    const own = join(dir, 'own.sock')
    const notify = join(dir, 'notify.sock')
    writeFileSync(join(dir, 'none.json'), '{}')
    const receiver = spawn(PYTHON, ['-c', RECEIVE, notify], { stdio: ['ignore', 'pipe', 'inherit'] })
    t.after(() => { receiver.kill('SIGKILL') })
    let notes = ''
    const noted = async (re: RegExp): Promise<void> => {
      for (let i = 0; i < 1200 && !re.test(notes); i++) await new Promise((resolve) => setTimeout(resolve, 25))
      assert.match(notes, re)
    }
    receiver.stdout.on('data', (b: Buffer) => { notes += b.toString() })
    await noted(/bound/)
    const d = startProc(PYTHON, ['-c', ACTIVATE, activated, process.execPath, MAIN, 'daemon', '-H', 'fd://', '-H', `unix://${own}`, '--group', '65534',
      '--data-root', join(dir, 'data'), '--exec-root', join(dir, 'run'), '--config-file', join(dir, 'none.json'), ...daemonNetworkArgs(net)],
    { env: { ...process.env, NOTIFY_SOCKET: notify } })
    t.after(async () => { await cleanupDaemon(d.child, dir, net) })
    await pingable(activated, d)
    await d.waitFor(/level=info msg="Berth .* started: /)
    assert.equal((await request(own, 'GET', '/_ping')).status, 200)
    await d.waitFor(new RegExp(`API listening on unix://${activated.replace(/\./g, '\\.')} \\(fd 3\\)`))
    await noted(new RegExp(`READY=1 MAINPID=${String(d.child.pid)} STATUS=listening on unix://`))
    assert.equal(statSync(own).gid, 65534, '--group gives the socket it makes that group')
    assert.equal(statSync(own).mode & 0o777, 0o660)
    // what the daemon starts (a container's monitor, the runtime under it) inherits neither the sockets' variables
    // nor NOTIFY_SOCKET (runc would hand a container's own notifications to the service manager)
    await importBusybox(own)
    const id = await createContainer(own, { Image: 'busybox', Cmd: ['sleep', '30'] })
    assert.equal((await request(own, 'POST', `/containers/${id}/start`)).status, 204)
    const shim = spawnSync('pgrep', ['-f', `berth-shim.*${id}`], { encoding: 'utf8' }).stdout.trim().split('\n')[0] ?? ''
    assert.match(shim, /^\d+$/, 'the container\'s monitor runs')
    const env = readFileSync(`/proc/${shim}/environ`, 'utf8').split('\0')
    assert.ok(env.length > 1)
    assert.ok(!env.some((e) => /^(LISTEN_FDS|LISTEN_PID|LISTEN_FDNAMES|NOTIFY_SOCKET)=/.test(e)), env.join(' '))
    assert.equal((await request(own, 'DELETE', `/containers/${id}?force=1`)).status, 204)
    d.child.kill('SIGTERM')
    assert.equal(await d.exited(), 0)
    await noted(/STOPPING=1/)
    assert.ok(existsSync(activated), 'the service manager\'s socket is left to it')
    assert.ok(!existsSync(own), 'the daemon\'s own socket goes')
  })

  it('fd:// without sockets passed is refused with what to do', async (t) => {
    const dir = tmpDir()
    writeFileSync(join(dir, 'none.json'), '{}')
    const d = startProc(process.execPath, [MAIN, 'daemon', '-H', 'fd://', '--data-root', join(dir, 'data'), '--exec-root', join(dir, 'run'), '--config-file', join(dir, 'none.json')])
    t.after(async () => { await cleanupDaemon(d.child, dir, uniqueNetworkOptions()) })
    assert.equal(await d.exited(), 1)
    assert.match(d.stderr(), /no sockets were passed for fd:\/\/: start the daemon through systemd socket activation/)
    assert.ok(!existsSync(join(dir, 'data')))
  })
})
