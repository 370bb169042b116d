// RuntimeFeatures: each runtime's `features` document, asked of real programs (shell scripts standing in for runtimes).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { RuntimeFeatures } from '../../lib/runtime/runtime-features.js'
import { tmpDir } from '../helpers/engine.js'

test('a features document is asked once per binary and options, compacted; failures and non-objects give none and are asked again later', async (t) => {
  const dir = tmpDir()
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  const calls = join(dir, 'calls')
  const script = (name: string, body: string): string => {
    const p = join(dir, name)
    writeFileSync(p, `#!/bin/sh\necho "${name} $*" >> '${calls}'\n${body}\n`, { mode: 0o755 })
    return p
  }
  const good = script('good', 'printf \'{\\n  "ociVersionMin": "1.0.0",\\n  "hooks": ["prestart"]\\n}\\n\'')
  const failing = script('failing', 'echo nope >&2; exit 1')
  const array = script('array', 'echo \'[1, 2]\'')
  const garbage = script('garbage', 'echo \'{"unterminated\'')
  const f = new RuntimeFeatures()
  const rts = [
    { name: 'runc', path: good, args: [] },
    { name: 'io.containerd.runc.v2', path: good, args: [] },
    { name: 'debug', path: good, args: ['--debug'] },
    { name: 'failing', path: failing, args: [] },
    { name: 'array', path: array, args: [] },
    { name: 'garbage', path: garbage, args: [] },
    { name: 'missing', path: join(dir, 'missing'), args: [] }
  ]
  const doc = '{"ociVersionMin":"1.0.0","hooks":["prestart"]}'
  const expected = new Map([['runc', doc], ['io.containerd.runc.v2', doc], ['debug', doc]])
  assert.deepEqual(await f.of(rts, 1_000_000), expected)
  const asked = (): string[] => readFileSync(calls, 'utf8').trim().split('\n').sort()
  assert.deepEqual(asked(), ['array features', 'failing features', 'garbage features', 'good --debug features', 'good features'])
  // asked again: nothing runs; a minute later the failures are asked again, the documents are kept
  assert.deepEqual(await f.of(rts, 1_000_000 + 1000), expected)
  assert.equal(asked().length, 5)
  assert.deepEqual(await f.of(rts, Date.now() + 61_000), expected)
  assert.deepEqual(asked(), ['array features', 'array features', 'failing features', 'failing features', 'garbage features', 'garbage features', 'good --debug features', 'good features'])
  // a runtime no longer listed is forgotten: listed again, it is asked again
  assert.deepEqual(await f.of(rts.slice(0, 1)), new Map([['runc', doc]]))
  assert.deepEqual(await f.of(rts.slice(2, 3)), new Map([['debug', doc]]))
  assert.equal(asked().filter((l) => l === 'good --debug features').length, 2)
})
