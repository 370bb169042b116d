// Issue 21.5: an image whose /etc/group is a FIFO hung `docker run -u 0 img id` for ever in `runc init` (the
// runtime reads /etc/passwd and /etc/group with blocking reads to set up the user, even a numeric one); the container
// stayed Created and `docker rm -f` timed out after 60 s. dockerd 20.10 hangs the same way (its own read of the file
// blocks, and `rm -f` with it). Now a start or an exec whose /etc/passwd or /etc/group is not a regular file (or
// leads into /dev, /proc, /sys) is refused at once, and a runtime stuck anyway (a FIFO bound over /etc/group from
// the host) is ended by `kill`, `stop` or `rm -f`: its processes and its cgroup go.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'
import { startEngine, request, importBusybox, createContainer, containerSkipReason, tmpDir, cleanupDir } from '../helpers/engine.js'
import { busyboxWith } from '../helpers/tar.js'
import { demuxAll } from '../../lib/stream/stdcopy.js'
import { containerCgroupPath, isCgroup2 } from '../../lib/runtime/cgroups.js'

const skip = containerSkipReason()

/** Whether any process is left in the container's cgroup, and whether its directories are still there. */
async function cgroupLeft (id: string): Promise<{ pids: number, dirs: string[] }> {
  const path = containerCgroupPath(id)
  const dirs = await isCgroup2() ? [`/sys/fs/cgroup${path}`] : readdirSync('/sys/fs/cgroup').map((c) => `/sys/fs/cgroup/${c}${path}`)
  const present = [...new Set(dirs.filter((d) => existsSync(d)))]
  let pids = 0
  for (const d of present) pids += readFileSync(join(d, 'cgroup.procs'), 'utf8').split('\n').filter((l) => l !== '').length
  return { pids, dirs: present }
}

function isFifo (path: string): boolean {
  try { return lstatSync(path).isFIFO() } catch { return false }
}

/** runc init processes of this container (its cgroup named in /proc/PID/cgroup). */
function runtimeProcesses (id: string): number[] {
  const out: number[] = []
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      if (readFileSync(`/proc/${d}/cgroup`, 'utf8').includes(id)) out.push(Number(d))
    } catch { /* gone */ }
  }
  return out
}

test('a runtime that would hang on the image\'s user files (21.5)', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const importImage = async (ref: string, extra: Parameters<typeof busyboxWith>[0]): Promise<void> => {
    const r = await request(socket, 'POST', `/images/create?fromSrc=-&repo=${ref}&tag=latest`, { raw: await busyboxWith(extra), headers: { 'Content-Type': 'application/x-tar' } })
    assert.match(r.text, /"status":"sha256:[0-9a-f]{64}"/, r.text)
  }
  await importImage('fifogroup', [{ name: 'etc/group', type: 'fifo', mode: 0o644 }])
  await importImage('fifopasswd', [{ name: 'etc/passwd', type: 'fifo', mode: 0o644 }])
  await importImage('zerogroup', [{ name: 'etc/group', type: 'symlink', mode: 0o777, linkname: '/dev/zero' }])

  await t.test('docker run -u 0 of an image with a FIFO or a device link as a user file: refused at once, nothing left', async () => {
    for (const [image, message] of [
      ['fifogroup', '/etc/group in the container is a fifo, not a regular file'],
      ['fifopasswd', '/etc/passwd in the container is a fifo, not a regular file'],
      ['zerogroup', '/etc/group in the container resolves to /dev/zero, which the runtime mounts over']
    ]) {
      const id = await createContainer(socket, { Image: image, User: '0', Cmd: ['id'] })
      const t0 = Date.now()
      const r = await request(socket, 'POST', `/containers/${id}/start`)
      assert.ok(Date.now() - t0 < 10_000, `${image}: start took ${Date.now() - t0} ms`)
      assert.equal(r.status, 400, r.text)
      assert.match((r.json() as { message: string }).message, new RegExp(message.replace(/[/.]/g, '\\$&')))
      const state = ((await request(socket, 'GET', `/containers/${id}/json`)).json() as { State: { Status: string } }).State
      assert.equal(state.Status, 'exited')
      assert.deepEqual(runtimeProcesses(id), [])
      assert.equal((await request(socket, 'DELETE', `/containers/${id}`)).status, 204)
    }
  })

  await t.test('a container that made its /etc/group a FIFO: its next start and its execs are refused at once', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sh', '-c', 'test -p /etc/group || (rm /etc/group && mkfifo /etc/group)'] })
    assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
    await request(socket, 'POST', `/containers/${id}/wait`)
    const again = await request(socket, 'POST', `/containers/${id}/start`)
    assert.equal(again.status, 400, again.text)
    assert.match(again.text, /\/etc\/group in the container is a fifo/)
    // a running container that makes one: an exec (no user given: the runtime reads the files all the same)
    const runner = await createContainer(socket, { Image: 'busybox', Cmd: ['sh', '-c', 'rm /etc/group && mkfifo /etc/group && sleep 300'] })
    assert.equal((await request(socket, 'POST', `/containers/${runner}/start`)).status, 204)
    // (the FIFO seen from the host, through the container's root: an exec racing its creation could pass the check
    // and then block in the runtime, which only a kill of the container ends)
    const pid = ((await request(socket, 'GET', `/containers/${runner}/json`)).json() as { State: { Pid: number } }).State.Pid
    for (let i = 0; i < 200 && !isFifo(`/proc/${pid}/root/etc/group`); i++) await new Promise((resolve) => setTimeout(resolve, 50))
    assert.ok(isFifo(`/proc/${pid}/root/etc/group`))
    const e = await request(socket, 'POST', `/containers/${runner}/exec`, { body: { Cmd: ['id'], AttachStdout: true, AttachStderr: true } })
    const t0 = Date.now()
    const out = await request(socket, 'POST', `/exec/${(e.json() as { Id: string }).Id}/start`, { body: { Detach: false } })
    assert.ok(Date.now() - t0 < 10_000)
    assert.match(out.body.toString('latin1') + demuxAll(out.body).stdout.toString(), /\/etc\/group in the container is a fifo/)
    assert.equal((await request(socket, 'DELETE', `/containers/${runner}?force=1`)).status, 204)
    assert.equal((await request(socket, 'DELETE', `/containers/${id}`)).status, 204)
  })

  await t.test('a runtime stuck anyway (a FIFO bound from the host) is ended by kill, stop and rm -f', async () => {
    const dir = tmpDir()
    t.after(async () => { await cleanupDir(dir) })
    const fifo = join(dir, 'group')
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0)
    for (const how of ['kill', 'stop', 'rm -f']) {
      const id = await createContainer(socket, { Image: 'busybox', User: '0', Cmd: ['id'], HostConfig: { Binds: [`${fifo}:/etc/group`] } })
      const starting = request(socket, 'POST', `/containers/${id}/start`)
      // the runtime is in the container's cgroup, blocked reading the FIFO
      for (let i = 0; i < 200 && runtimeProcesses(id).length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50))
      if (runtimeProcesses(id).length === 0) {
        const early = await Promise.race([starting, new Promise<null>((resolve) => setTimeout(() => { resolve(null) }, 100))])
        assert.fail(`${how}: the runtime never started: ${early === null ? 'start pending' : `${early.status} ${early.text}`}`)
      }
      const t0 = Date.now()
      const ended = how === 'kill'
        ? await request(socket, 'POST', `/containers/${id}/kill`)
        : how === 'stop' ? await request(socket, 'POST', `/containers/${id}/stop?t=1`) : await request(socket, 'DELETE', `/containers/${id}?force=1`)
      assert.equal(ended.status, 204, `${how}: ${ended.text}`)
      assert.ok(Date.now() - t0 < 15_000, `${how} took ${Date.now() - t0} ms`)
      const start = await starting
      assert.equal(start.status, 409, start.text)
      assert.match(start.text, /was killed while its runtime was starting it/)
      assert.deepEqual(runtimeProcesses(id), [], how)
      assert.deepEqual(await cgroupLeft(id), { pids: 0, dirs: [] }, how)
      if (how !== 'rm -f') {
        const state = ((await request(socket, 'GET', `/containers/${id}/json`)).json() as { State: { Status: string, ExitCode: number } }).State
        assert.deepEqual([state.Status, state.ExitCode], ['exited', 137])
        assert.equal((await request(socket, 'DELETE', `/containers/${id}`)).status, 204)
      } else assert.equal((await request(socket, 'GET', `/containers/${id}/json`)).status, 404)
    }
  })
})
