// The Berth engine pulling from and pushing to this registry through the docker CLI. Skipped, with the reason,
// until the engine implements pull (POST /images/create?fromImage) and push.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile, spawnSync } from 'node:child_process'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { busyboxTar, containerSkipReason, request as engineRequest, startEngine } from '../helpers/engine.js'
import { startRegistry, client, tmpDir } from './helpers.js'
import { writeOciLayout } from './oci-layout.js'

const run = promisify(execFile)

function staticSkip (): string | null {
  const c = containerSkipReason()
  if (c !== null) return c
  if (spawnSync('docker', ['--version']).status !== 0) return 'the docker CLI is not installed'
  if (spawnSync('skopeo', ['--version']).status !== 0) return 'skopeo is not installed (apt-get install -y skopeo)'
  return null
}

test('docker pull and push through the Berth engine, digests unchanged', { skip: staticSkip() ?? false }, async (t) => {
  const reg = await startRegistry(t)
  const host = new URL(reg.url).host
  const work = tmpDir('berth-engine-pull-')
  t.after(() => { rmSync(work, { recursive: true, force: true }) })
  const layout = join(work, 'layout')
  writeOciLayout(layout, [readFileSync(busyboxTar())])
  await run('skopeo', ['copy', '--format', 'v2s2', '--dest-tls-verify=false', `oci:${layout}:latest`, `docker://${host}/test/busybox:latest`])
  const pushed = String((await client(reg.url)('HEAD', '/v2/test/busybox/manifests/latest')).headers['docker-content-digest'])

  const eng = await startEngine(t)
  const probe = await engineRequest(eng.socket, 'POST', `/images/create?fromImage=${encodeURIComponent(`${host}/test/busybox`)}&tag=latest`)
  if (probe.status === 501 || /not supported/.test(probe.text)) {
    t.skip(`the engine cannot pull yet: ${probe.text.trim()}`)
    return
  }
  assert.equal(probe.status, 200, probe.text)
  const env = { ...process.env, DOCKER_HOST: `unix://${eng.socket}` }
  const inspect = JSON.parse((await run('docker', ['image', 'inspect', `${host}/test/busybox:latest`], { env })).stdout) as Array<{ RepoDigests: string[] }>
  assert.ok(inspect[0]?.RepoDigests.includes(`${host}/test/busybox@${pushed}`), JSON.stringify(inspect[0]?.RepoDigests))
  await run('docker', ['tag', `${host}/test/busybox:latest`, `${host}/test/pushed:latest`], { env })
  const push = await run('docker', ['push', `${host}/test/pushed:latest`], { env })
  assert.match(push.stdout, new RegExp(pushed.replace(':', ':')))
  const head = await client(reg.url)('HEAD', '/v2/test/pushed/manifests/latest')
  assert.equal(head.headers['docker-content-digest'], pushed)
  assert.ok(existsSync(reg.dataRoot))
})
