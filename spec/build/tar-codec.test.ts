// The builder's tar codec: header round trips, PAX long names, GNU base-256 numbers, bad checksums, and archives
// that the system tar reads back.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { encodeHeader, parseHeader, parsePax, padding, BLOCK, type TarHeader } from '../../lib/build/tar-codec.js'

const file: TarHeader = { name: 'dir/file.txt', mode: 0o640, uid: 1000, gid: 100, size: 5, mtime: 1_700_000_000, type: 'file', linkname: '' }

test('a ustar header round-trips', () => {
  const b = encodeHeader(file)
  assert.equal(b.length, BLOCK)
  assert.equal(b.toString('latin1', 257, 262), 'ustar')
  assert.deepEqual(parseHeader(b), file)
  assert.deepEqual(parseHeader(encodeHeader({ ...file, name: 'd', type: 'directory', size: 0 })), { ...file, name: 'd/', type: 'directory', size: 0 })
  assert.deepEqual(parseHeader(encodeHeader({ ...file, type: 'symlink', size: 0, linkname: '../target' }))?.linkname, '../target')
})

test('long and non-ASCII names go in a PAX record', () => {
  const name = 'a/'.repeat(80) + 'ünïcode.txt'
  const b = encodeHeader({ ...file, name })
  assert.equal(b.length % BLOCK, 0)
  const pax = parseHeader(b.subarray(0, BLOCK))
  assert.equal(pax?.type, 'pax')
  const recs = parsePax(b.subarray(BLOCK, BLOCK + (pax?.size ?? 0)))
  assert.equal(recs.get('path'), name)
  // each record's length counts its own digits
  const raw = b.subarray(BLOCK, BLOCK + (pax?.size ?? 0)).toString('utf8')
  assert.equal(Number(raw.split(' ')[0]), Buffer.byteLength(raw))
})

test('the end block, bad checksums, base-256 sizes, padding', () => {
  assert.equal(parseHeader(Buffer.alloc(BLOCK)), null)
  const b = encodeHeader(file)
  b[0] = 'X'.charCodeAt(0)
  assert.throws(() => parseHeader(b), /invalid tar header checksum/)
  assert.throws(() => parseHeader(Buffer.alloc(100, 1)), /unexpected end of data/)
  const big = encodeHeader(file)
  big.fill(0, 124, 136)
  big[124] = 0x80
  big.writeUIntBE(9 * 1024 ** 3, 136 - 6, 6)
  big.write('        ', 148, 'latin1')
  let sum = 0
  for (const x of big) sum += x
  big.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'latin1')
  assert.equal(parseHeader(big)?.size, 9 * 1024 ** 3)
  assert.deepEqual([padding(0), padding(1), padding(512), padding(513)], [0, 511, 0, 511])
})

test('the system tar reads what we write', { skip: spawnSync('tar', ['--version']).status === 0 ? false : 'tar is not installed' }, () => {
  const long = 'deep/'.repeat(30) + 'file.txt'
  const parts = [
    encodeHeader({ ...file, name: 'dir', type: 'directory', size: 0, mode: 0o755 }),
    encodeHeader(file), Buffer.from('hello'), Buffer.alloc(padding(5)),
    encodeHeader({ ...file, name: long, size: 2 }), Buffer.from('hi'), Buffer.alloc(padding(2)),
    encodeHeader({ ...file, name: 'dir/link', type: 'symlink', size: 0, linkname: 'file.txt', mode: 0o777 }),
    Buffer.alloc(2 * BLOCK)
  ]
  const r = spawnSync('tar', ['-tvf', '-', '--numeric-owner'], { input: Buffer.concat(parts), encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  const lines = r.stdout.trim().split('\n')
  assert.match(lines[0] as string, /^drwxr-xr-x 1000\/100 .* dir\/$/)
  assert.match(lines[1] as string, /^-rw-r----- 1000\/100\s+5 .* dir\/file\.txt$/)
  assert.ok((lines[2] as string).endsWith(long))
  assert.match(lines[3] as string, /^lrwxrwxrwx .* dir\/link -> file\.txt$/)
})
