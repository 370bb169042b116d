// Router and query helpers: table-driven, pure.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Router } from '../../lib/http/router.js'
import { boolValue, parseFilters, parseTimestamp } from '../../lib/http/query.js'
import { compareVersions } from '../../lib/api/api-version.js'
import { parseReference, familiarString, withDefaultTag } from '../../lib/image/reference.js'

test('greedy {name:.*} routes image names with / and :, and %-decodes', () => {
  const r = new Router<string>().add([
    { method: 'GET', path: '/images/json', handler: 'list' },
    { method: 'GET', path: '/images/{name:.*}/json', handler: 'inspect' },
    { method: 'DELETE', path: '/images/{name:.*}', handler: 'delete' },
    { method: 'POST', path: '/exec/{id}/start', handler: 'start' }
  ])
  assert.deepEqual(r.match('GET', '/images/docker.io/library/busybox:latest/json'), { handler: 'inspect', params: { name: 'docker.io/library/busybox:latest' } })
  assert.deepEqual(r.match('DELETE', '/images/sha256:abc'), { handler: 'delete', params: { name: 'sha256:abc' } })
  assert.equal(r.match('GET', '/images/json')?.handler, 'list')
  assert.deepEqual(r.match('GET', '/images/a%2Fb/json')?.params, { name: 'a/b' })
  assert.equal(r.match('HEAD', '/images/json')?.handler, 'list')
  assert.equal(r.match('POST', '/images/json'), null)
  assert.equal(r.match('POST', '/exec/a/b/start'), null)
})

test('Go-style booleans', () => {
  const q = new URLSearchParams('a=1&b=False&c=true&d=&e=no&f=none&g=yes&h=0')
  assert.deepEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'missing'].map((k) => boolValue(q, k)), [true, false, true, false, false, false, true, false, false])
})

test('filters in both shapes; unknown keys refused', () => {
  const allowed = new Set(['status', 'label'])
  assert.deepEqual([...parseFilters('{"status":{"exited":true}}', allowed)], [['status', ['exited']]])
  assert.deepEqual([...parseFilters('{"status":["exited","created"]}', allowed)], [['status', ['exited', 'created']]])
  assert.throws(() => parseFilters('{"x":["y"]}', allowed), /invalid filter 'x'/)
  assert.throws(() => parseFilters('garbage', allowed), /invalid filter/)
})

test('timestamps: seconds.nanos, seconds, RFC 3339', () => {
  assert.equal(parseTimestamp('1716800000.5', 'since'), 1716800000500000000n)
  assert.equal(parseTimestamp('1716800000', 'since'), 1716800000000000000n)
  assert.equal(parseTimestamp('2024-05-27T08:53:20.25Z', 'since'), 1716800000250000000n)
  assert.throws(() => parseTimestamp('yesterday', 'since'))
})

test('versions compare numerically', () => {
  assert.equal(compareVersions('1.9', '1.24'), -1)
  assert.equal(compareVersions('1.50', '1.5'), 1)
  assert.equal(compareVersions('1.50', '1.50'), 0)
})

test('references normalise like the distribution rules', () => {
  assert.deepEqual(withDefaultTag(parseReference('busybox')), { domain: 'docker.io', path: 'library/busybox', tag: 'latest' })
  assert.equal(familiarString(withDefaultTag(parseReference('docker.io/library/busybox'))), 'busybox:latest')
  assert.equal(familiarString(parseReference('localhost:5000/a/b:1')), 'localhost:5000/a/b:1')
  assert.equal(familiarString(parseReference('user/app@sha256:' + 'a'.repeat(64))), 'user/app@sha256:' + 'a'.repeat(64))
  for (const bad of ['', 'UPPER', 'a:b:c', 'x@sha256:zz', '-x', 'a//b']) assert.throws(() => parseReference(bad), /invalid reference format/, bad)
})
