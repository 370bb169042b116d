// The one mount parser: -v strings, --mount objects, --volumes-from and Config.Volumes, with dockerd's errors.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parseBind, parseApiMount, parseVolumesFrom, resolveMounts, parseMode } from '../../lib/volumes/mount-spec.js'

const msg = (fn: () => unknown): string => { try { fn(); return '' } catch (err) { return (err as Error).message } }

test('-v forms', () => {
  assert.deepEqual(parseBind('v1:/data'), { type: 'volume', source: 'v1', destination: '/data', rw: true, mode: 'z', propagation: '', nocopy: false, createSource: false, driver: 'local', anonymous: false })
  const ro = parseBind('v1:/data/:ro,nocopy')
  assert.equal(ro.destination, '/data')
  assert.equal(ro.rw, false)
  assert.equal(ro.nocopy, true)
  assert.equal(ro.mode, 'ro,nocopy')
  assert.equal(parseBind('/anon').anonymous, true)
  assert.equal(parseBind('/anon').mode, '')
  const b = parseBind('/tmp:/h:ro,rshared')
  assert.deepEqual([b.type, b.source, b.rw, b.propagation, b.createSource], ['bind', '/tmp', false, 'rshared', true])
  assert.equal(parseBind('/tmp:/h:Z').propagation, 'rprivate')
  assert.equal(msg(() => parseBind('v2:data')), `invalid volume specification: 'v2:data': invalid mount config for type "volume": invalid mount path: 'data' mount path must be absolute`)
  assert.equal(msg(() => parseBind('v2:/')), `invalid volume specification: 'v2:/': invalid mount config for type "volume": invalid specification: destination can't be '/'`)
  assert.equal(msg(() => parseBind('a:b:c:d')), `invalid volume specification: 'a:b:c:d'`)
  assert.equal(msg(() => parseBind('/tmp:/a:bogus')), 'invalid mode: bogus')
  assert.equal(msg(() => parseBind('/tmp:/a:ro,rw')), 'invalid mode: ro,rw')
  assert.equal(msg(() => parseBind('/tmp:/a:nocopy')), `invalid volume specification: '/tmp:/a:nocopy': invalid mount config for type "bind": field VolumeOptions must not be specified`)
  assert.equal(msg(() => parseBind('/foo:rw')), `invalid volume specification: '/foo:rw'`)
  assert.equal(parseMode('z,ro,rprivate')?.rw, false)
})

test('--mount forms', () => {
  const v = parseApiMount({ Type: 'volume', Source: 'x1', Target: '/m', ReadOnly: true, VolumeOptions: { NoCopy: true, Labels: { a: 'b' }, DriverConfig: { Name: 'local', Options: { type: 'tmpfs', device: 'tmpfs' } } } })
  assert.deepEqual([v.type, v.source, v.rw, v.nocopy, v.volumeLabels, v.volumeOptions], ['volume', 'x1', false, true, { a: 'b' }, { type: 'tmpfs', device: 'tmpfs' }])
  const t = parseApiMount({ Type: 'tmpfs', Target: '/t', TmpfsOptions: { SizeBytes: 1048576, Mode: 0o1777 } })
  assert.deepEqual([t.tmpfsSize, t.tmpfsMode], [1048576, 0o1777])
  const b = parseApiMount({ Type: 'bind', Source: '/tmp', Target: '/b', BindOptions: { Propagation: 'rslave' } })
  assert.deepEqual([b.propagation, b.createSource], ['rslave', false])
  assert.equal(msg(() => parseApiMount({ Type: 'volume', Target: 'rel' })), `invalid mount config for type "volume": invalid mount path: 'rel' mount path must be absolute`)
  assert.equal(msg(() => parseApiMount({ Type: 'bogus', Target: '/a' })), 'invalid mount config for type "bogus": mount type unknown')
  assert.equal(msg(() => parseApiMount({ Type: 'tmpfs', Target: '/a', Source: 'x' })), 'invalid mount config for type "tmpfs": field Source must not be specified')
  assert.equal(msg(() => parseApiMount({ Type: 'bind', Target: '/a' })), 'invalid mount config for type "bind": field Source must not be empty')
  assert.equal(msg(() => parseApiMount({ Type: 'volume', Target: '/' })), `invalid mount config for type "volume": invalid specification: destination can't be '/'`)
})

test('precedence, duplicates, --volumes-from and Config.Volumes', () => {
  assert.deepEqual(parseVolumesFrom('c1:ro'), { container: 'c1', mode: 'ro' })
  assert.equal(msg(() => parseVolumesFrom('c1:bad')), 'invalid mode: bad')
  assert.equal(msg(() => resolveMounts({ binds: ['/tmp:/a'], mounts: [{ Type: 'tmpfs', Target: '/a' }], volumesFrom: [], volumes: [] })), 'Duplicate mount point: /a')
  assert.equal(msg(() => resolveMounts({ binds: ['v2:/a', 'v3:/a/'], mounts: [], volumesFrom: [], volumes: [] })), 'Duplicate mount point: /a')
  const from = resolveMounts({ binds: ['v1:/data', '/tmp:/h'], mounts: [], volumesFrom: [], volumes: [] })
  const ms = resolveMounts({ binds: ['/srv:/h'], mounts: [], volumesFrom: [{ mounts: from, mode: 'ro' }], volumes: ['/data', '/vol', '/vol/sub'] })
  assert.deepEqual(ms.map((m) => `${m.destination} ${m.type} ${m.source} ${m.rw ? 'rw' : 'ro'}${m.anonymous ? ' anon' : ''}`),
    ['/data volume v1 ro', '/h bind /srv rw', '/vol volume  rw anon', '/vol/sub volume  rw anon'])
})
