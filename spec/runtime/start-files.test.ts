// A start's bundle files (config.json, hosts, hostname, resolv.conf) are written by the container's prepared monitor
// (they follow its command line on the daemon's connection): config.json stays private, the /etc files readable, and
// the container's environment (in config.json) never shows on a command line ps reads.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, request, importBusybox, createContainer } from '../helpers/engine.js'

const skip = containerSkipReason()

function cmdlines (): string[] {
  const out: string[] = []
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue
    try { out.push(readFileSync(`/proc/${p}/cmdline`, 'latin1').replaceAll('\0', ' ')) } catch { /* gone */ }
  }
  return out
}

test('the monitor writes a start\'s bundle files: modes kept, the environment on no command line', { skip: skip ?? false }, async (t) => {
  const { socket, dataRoot } = await startEngine(t)
  await importBusybox(socket)
  const secret = `S3cret-${process.pid}-${Date.now()}`
  // several starts: the first may find no prepared monitor yet (the daemon writes the files then), the next do
  for (let i = 0; i < 3; i++) {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sleep', '30'], Env: [`TOKEN=${secret}`], Hostname: `h${i}` })
    assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
    const dir = join(dataRoot, 'containers', id)
    assert.equal(statSync(join(dir, 'config.json')).mode & 0o777, 0o600)
    for (const f of ['hosts', 'hostname', 'resolv.conf']) assert.equal(statSync(join(dir, f)).mode & 0o777, 0o644, f)
    assert.equal(readFileSync(join(dir, 'hostname'), 'utf8'), `h${i}\n`)
    assert.ok(readFileSync(join(dir, 'config.json'), 'utf8').includes(secret))
    assert.equal(cmdlines().some((c) => c.includes(secret)), false, 'the environment shows on a command line')
    assert.equal((await request(socket, 'DELETE', `/containers/${id}?force=1`)).status, 204)
  }
})
