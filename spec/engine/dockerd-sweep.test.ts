// What a side-by-side sweep against dockerd found Berth answering differently, through the docker CLI and raw HTTP:
// list filters and their refusals, and error answers. Each assertion is what dockerd (28, the API version Berth
// serves; where 20.10 answers the same, checked against it too) gives.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, importBusybox, request } from '../helpers/engine.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')

test('dockerd sweep: list filters and error answers', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  const ok = async (...args: string[]): Promise<string> => {
    const r = await docker(...args)
    assert.equal(r.status, 0, `docker ${args.join(' ')}: ${r.stderr}`)
    return r.stdout
  }
  const lines = (s: string): string[] => s.split('\n').filter((x) => x !== '').sort()

  await t.test('images REPO and --filter reference= list only the matching names of an image', async () => {
    await ok('tag', 'busybox', 'sw/img:v1')
    await ok('tag', 'busybox', 'sw/img:v2')
    const rows = async (...args: string[]): Promise<string[]> => lines(await ok('images', '--format', '{{.Repository}}:{{.Tag}}', ...args))
    assert.deepEqual(await rows(), ['busybox:latest', 'sw/img:v1', 'sw/img:v2'])
    assert.deepEqual(await rows('busybox'), ['busybox:latest'])
    assert.deepEqual(await rows('sw/img:v2'), ['sw/img:v2'])
    assert.deepEqual(await rows('--filter', 'reference=sw/*'), ['sw/img:v1', 'sw/img:v2'])
    assert.deepEqual(await rows('--filter', 'reference=busy*'), ['busybox:latest'])
    assert.deepEqual(await rows('nothing-here'), [])
    const r = await request(socket, 'GET', `/images/json?filters=${encodeURIComponent(JSON.stringify({ reference: ['sw/img:v1'] }))}`)
    const list = r.json() as Array<{ RepoTags: string[], RepoDigests: string[] }>
    assert.equal(list.length, 1)
    assert.deepEqual(list[0]?.RepoTags, ['sw/img:v1'])
    assert.deepEqual(list[0]?.RepoDigests, [])
    await ok('rmi', 'sw/img:v1', 'sw/img:v2')
  })
})
