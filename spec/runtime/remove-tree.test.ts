// An auto-removed container's monitor deletes its writable layer and the overlay's directories after the exit
// (--remove-tree): the tree is the container's own writing, so no link in it is followed (a link to a host directory
// leaves that directory's files alone) and a tree deeper than the monitor goes is finished by the daemon's removal.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, writeFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, tmpDir, cleanupDir, request, importBusybox, createContainer } from '../helpers/engine.js'

const skip = containerSkipReason()

async function gone (path: string): Promise<boolean> {
  for (let i = 0; i < 250 && existsSync(path); i++) await new Promise((resolve) => setTimeout(resolve, 20))
  return !existsSync(path)
}

test('an auto-removed container\'s trees go without following its links, deep ones too', { skip: skip ?? false }, async (t) => {
  const host = tmpDir('berth-victim-')
  t.after(async () => { await cleanupDir(host) })
  mkdirSync(join(host, 'sub'))
  writeFileSync(join(host, 'keep'), 'host file\n')
  writeFileSync(join(host, 'sub', 'keep2'), 'host file\n')
  const { socket, dataRoot } = await startEngine(t)
  await importBusybox(socket)
  const deep = Array.from({ length: 48 }, (_, i) => `d${i}`).join('/')
  const script = [
    `ln -s ${host} /escape`, `ln -s ${join(host, 'sub')} /etc/escape2`, `mkdir -p /a/b && ln -s ${host} /a/b/l`,
    `mkdir -p /${deep} && echo x > /${deep}/f && ln -s ${host} /${deep}/l`, 'echo done'
  ].join(' && ')
  const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sh', '-c', script], HostConfig: { AutoRemove: true } })
  const waiting = request(socket, 'POST', `/containers/${id}/wait?condition=removed`)
  const started = await request(socket, 'POST', `/containers/${id}/start`)
  assert.equal(started.status, 204, started.text)
  const waited = await waiting
  assert.equal(waited.status, 200, waited.text)
  assert.equal((waited.json() as { StatusCode: number }).StatusCode, 0)
  assert.ok(await gone(join(dataRoot, 'containers', id)), 'the container\'s directory is gone (the deep part by the daemon)')
  assert.deepEqual(readdirSync(host).sort(), ['keep', 'sub'])
  assert.deepEqual(readdirSync(join(host, 'sub')), ['keep2'])
})
