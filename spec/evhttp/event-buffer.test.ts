// EventBuffer: libevent's evbuffer as PHP exposes it.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { EventBuffer } from '../../lib/evhttp/index.js'

function buf (...parts: string[]): EventBuffer {
  const b = new EventBuffer()
  for (const p of parts) b.add(p)
  return b
}

test('add, length, read across chunks', () => {
  const b = buf('hello', ' ', 'world')
  assert.equal(b.length, 11)
  assert.equal(b.contiguous_space, 5)
  assert.equal(b.read(7), 'hello w')
  assert.equal(b.length, 4)
  assert.equal(b.read(100), 'orld')
  assert.equal(b.read(1), '')
  assert.equal(b.add(new Uint8Array([0xc3, 0xa9])), true)
  assert.equal(b.read(2), 'é')
})

test('readBytes keeps raw bytes', () => {
  const b = new EventBuffer()
  b.add(Buffer.from([0, 255, 10]))
  assert.deepEqual([...b.readBytes(3)], [0, 255, 10])
})

test('addBuffer and prependBuffer move everything', () => {
  const a = buf('a')
  const b = buf('b', 'c')
  assert.equal(a.addBuffer(b), true)
  assert.equal(b.length, 0)
  assert.equal(a.prependBuffer(buf('0')), true)
  assert.equal(a.addBuffer(a), false)
  assert.equal(a.read(10), '0abc')
})

test('prepend and drain', () => {
  const b = buf('world')
  b.prepend('hello ')
  assert.equal(b.drain(2), true)
  assert.equal(b.drain(-1), false)
  assert.equal(b.pullup(-1), 'llo world')
  assert.equal(b.drain(100), true)
  assert.equal(b.length, 0)
})

test('copyout peeks into a by-reference target', () => {
  const b = buf('abc', 'def')
  const target = { data: '' }
  assert.equal(b.copyout(target, 4), 4)
  assert.equal(target.data, 'abcd')
  assert.equal(b.length, 6)
  assert.equal(b.copyout(target, -1), -1)
})

test('pullup linearises; null when asking for more than stored', () => {
  const b = buf('ab', 'cd')
  assert.equal(b.pullup(3), 'abc')
  assert.equal(b.pullup(5), null)
  assert.equal(b.pullup(0), '')
  assert.equal(b.length, 4)
})

test('substr and search (byte positions, across chunks)', () => {
  const b = buf('hello ', 'wor', 'ld')
  assert.equal(b.substr(6), 'world')
  assert.equal(b.substr(0, 5), 'hello')
  assert.equal(b.substr(20), false)
  assert.equal(b.search('wor'), 6)
  assert.equal(b.search('o', 5), 7)
  assert.equal(b.search('world', 0, 10), false)
  assert.equal(b.search('xyz'), false)
  assert.equal(new EventBuffer().search('a'), false)
})

test('readLine with every EOL style', () => {
  const any = buf('one\r\n\r\ntwo\n', 'three')
  assert.equal(any.readLine(EventBuffer.EOL_ANY), 'one')
  assert.equal(any.readLine(EventBuffer.EOL_ANY), 'two')
  assert.equal(any.readLine(EventBuffer.EOL_ANY), null)
  const crlf = buf('a\r\nb\nc\r')
  assert.equal(crlf.readLine(EventBuffer.EOL_CRLF), 'a')
  assert.equal(crlf.readLine(EventBuffer.EOL_CRLF), 'b')
  assert.equal(crlf.readLine(EventBuffer.EOL_CRLF), null)
  const strict = buf('a\nb\r\n')
  assert.equal(strict.readLine(EventBuffer.EOL_CRLF_STRICT), 'a\nb')
  const lf = buf('a\r\nb')
  assert.equal(lf.readLine(EventBuffer.EOL_LF), 'a\r')
  assert.equal(lf.searchEol(0, EventBuffer.EOL_LF), false)
  assert.equal(buf('xy\nz').searchEol(), 2)
  assert.equal(EventBuffer.EOL_ANY + EventBuffer.EOL_CRLF + EventBuffer.EOL_CRLF_STRICT + EventBuffer.EOL_LF, 6)
})
