// The runtime table (pure): names to binaries as dockerd knows them, the default, and a reload's replacement.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { isEngineError } from '../../lib/errors.js'
import { RuntimeTable } from '../../lib/runtime/runtimes.js'

test('stock runc (and containerd\'s name for it), configured runtimes with their args, the default', () => {
  const t = new RuntimeTable({ runtimes: { traced: { path: '/opt/traced', runtimeArgs: ['--debug'] } }, defaultName: 'runc', defaultPath: '/usr/sbin/runc', stockPath: '/usr/bin/runc' })
  // the default's checked binary is the stock runc's when the default is runc
  assert.deepEqual(t.resolve(''), { name: 'runc', path: '/usr/sbin/runc', args: [] })
  assert.deepEqual(t.resolve('io.containerd.runc.v2'), { name: 'io.containerd.runc.v2', path: '/usr/sbin/runc', args: [] })
  assert.deepEqual(t.resolve('traced'), { name: 'traced', path: '/opt/traced', args: ['--debug'] })
  assert.deepEqual(t.list().map((r) => r.name), ['runc', 'io.containerd.runc.v2', 'traced'])
  assert.throws(() => t.resolve('nosuch'), (err) => isEngineError(err) && err.kind === 'invalid-argument' && err.message === 'unknown or invalid runtime name: nosuch')
})

test('a default given as a binary is an entry of its own; the stock runc stays runc', () => {
  const t = new RuntimeTable({ runtimes: {}, defaultName: 'crun', defaultPath: '/usr/local/bin/crun', stockPath: '/usr/sbin/runc' })
  assert.equal(t.defaultName, 'crun')
  assert.deepEqual(t.resolve(''), { name: 'crun', path: '/usr/local/bin/crun', args: [] })
  assert.equal(t.resolve('runc').path, '/usr/sbin/runc')
})

test('a reload replaces the table; one it refuses changes nothing; the start\'s default keeps its checked binary', () => {
  const t = new RuntimeTable({ runtimes: { kata: { path: '/opt/kata' } }, defaultName: 'runc', defaultPath: '/opt/runc', stockPath: '/usr/sbin/runc' })
  t.reconfigure({ crun: { path: '/usr/bin/crun' } }, 'crun')
  assert.equal(t.defaultName, 'crun')
  assert.equal(t.has('kata'), false)
  assert.equal(t.resolve('runc').path, '/usr/sbin/runc')
  assert.throws(() => { t.reconfigure({ runc: { path: '/x' } }, undefined) }, /runtime name 'runc' is reserved/)
  assert.throws(() => { t.reconfigure({}, 'gone') }, /specified default runtime 'gone' does not exist/)
  assert.equal(t.defaultName, 'crun')
  assert.equal(t.resolve('crun').path, '/usr/bin/crun')
  t.reconfigure(undefined, 'runc')
  assert.deepEqual(t.resolve(''), { name: 'runc', path: '/opt/runc', args: [] })
})
