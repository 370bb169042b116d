// The seed's curl sequence, with the real curl binary: create → start → wait → logs → list → stop → images →
// commit, each reply in the seed's shape.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { startEngine, importBusybox, containerSkipReason } from '../helpers/engine.js'

const skip = containerSkipReason() ?? (spawnSync('curl', ['--version']).status === 0 ? null : 'curl is not installed')

async function curl (socket: string, args: string[]): Promise<{ code: number, out: Buffer }> {
  return await new Promise((resolve) => {
    const p = spawn('curl', ['-s', '--unix-socket', socket, ...args])
    const chunks: Buffer[] = []
    p.stdout.on('data', (d: Buffer) => chunks.push(d))
    p.on('close', (code) => resolve({ code: code ?? -1, out: Buffer.concat(chunks) }))
  })
}

test('the seed sequence through curl', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const v = 'http://localhost/v1.50'
  const create = await curl(socket, ['-H', 'Content-Type: application/json', '-d', '{"Image": "busybox", "Cmd": ["echo", "hello world"]}', '-X', 'POST', `${v}/containers/create`])
  const { Id, Warnings } = JSON.parse(create.out.toString()) as { Id: string, Warnings: unknown }
  assert.match(Id, /^[0-9a-f]{64}$/)
  assert.ok(Warnings === null || Array.isArray(Warnings))
  const short = Id.slice(0, 5)
  assert.equal((await curl(socket, ['-X', 'POST', `${v}/containers/${short}/start`])).out.length, 0)
  const wait = JSON.parse((await curl(socket, ['-X', 'POST', `${v}/containers/${short}/wait`])).out.toString()) as { StatusCode: number }
  assert.equal(wait.StatusCode, 0)
  const logs = (await curl(socket, ['--output', '-', `${v}/containers/${short}/logs?stdout=1`])).out
  assert.deepEqual([...logs.subarray(0, 8)], [1, 0, 0, 0, 0, 0, 0, 12])
  assert.equal(logs.subarray(8).toString(), 'hello world\n')
  // the old curl form http:/v1.50/... (no host) is the same request line
  const running = await curl(socket, ['-H', 'Content-Type: application/json', '-d', '{"Image": "busybox", "Cmd": ["sleep", "30"]}', '-X', 'POST', `${v}/containers/create`])
  const rid = (JSON.parse(running.out.toString()) as { Id: string }).Id
  await curl(socket, ['-X', 'POST', `${v}/containers/${rid.slice(0, 6)}/start`])
  const list = JSON.parse((await curl(socket, [`${v}/containers/json`])).out.toString()) as Array<{ Id: string, Names: string[], Image: string }>
  assert.equal(list.length, 1)
  assert.equal(list[0]?.Id, rid)
  assert.ok(list[0]?.Names.every((n) => n.startsWith('/')))
  assert.equal(list[0]?.Image, 'busybox')
  assert.equal((await curl(socket, ['-X', 'POST', `${v}/containers/${rid.slice(0, 6)}/stop?t=0`])).out.length, 0)
  assert.equal((JSON.parse((await curl(socket, [`${v}/containers/json`])).out.toString()) as unknown[]).length, 0)
  const images = JSON.parse((await curl(socket, [`${v}/images/json`])).out.toString()) as Array<{ Id: string, ParentId: string }>
  assert.match(images[0]?.Id ?? '', /^sha256:[0-9a-f]{64}$/)
  assert.equal(images[0]?.ParentId, '')
  const commit = JSON.parse((await curl(socket, ['-X', 'POST', `${v}/commit?container=${short}&repo=helloworld`])).out.toString()) as { Id: string }
  assert.match(commit.Id, /^sha256:[0-9a-f]{64}$/)
  const after = JSON.parse((await curl(socket, [`${v}/images/json`])).out.toString()) as Array<{ Id: string, ParentId: string, RepoTags: string[] }>
  const committed = after.find((i) => i.Id === commit.Id)
  assert.deepEqual(committed?.RepoTags, ['helloworld:latest'])
  assert.equal(committed?.ParentId, images[0]?.Id)
  // a pull from a registry that does not exist: a clear error before any record
  const pull = await curl(socket, ['-w', '%{http_code}', '-X', 'POST', `${v}/images/create?fromImage=127.0.0.1:1/nope&tag=latest`])
  assert.match(pull.out.toString(), /"message":".+"\}\n(4|5)\d\d$/)
})
