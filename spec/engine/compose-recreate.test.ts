// docker-compose 1.29 (Debian 12's) recreates a service after a change (issue 23.13): it reads ContainerConfig from
// image inspect on every recreate, which dockerd drops at API 1.45; Berth keeps it at every version.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, hasDockerCli, importBusybox, request, tmpDir, cleanupDir } from '../helpers/engine.js'
import { composeSkipReason, composeEnv, composeOk } from '../helpers/tools.js'
import { freeTcpPort, httpGet } from '../helpers/net.js'
import { until } from '../helpers/poll.js'

const skip = containerSkipReason() ?? composeSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')

test('docker-compose 1.29: up, change, up -d --build recreates the container and its port works', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const proj = tmpDir('berth-recreate-')
  t.after(async () => { await cleanupDir(proj) })
  const port = await freeTcpPort()
  writeFileSync(join(proj, 'Dockerfile'), 'FROM busybox\nVOLUME /data\nCOPY index.html /www/index.html\nCMD ["httpd", "-f", "-p", "8080", "-h", "/www"]\n')
  writeFileSync(join(proj, 'index.html'), 'v1\n')
  writeFileSync(join(proj, 'docker-compose.yml'), `version: "3"\nservices:\n  web:\n    build: .\n    ports:\n      - "127.0.0.1:${port}:8080"\n`)
  const compose = composeOk(composeEnv(socket, 'recreate'), proj)
  await compose('up', '-d', '--build')
  assert.equal(await until('v1 served', async () => await httpGet(port).catch(() => undefined)), 'v1\n')
  // every API version answers ContainerConfig (compose asks at the server's)
  for (const v of ['1.41', '1.45', '1.50']) {
    const img = (await request(socket, 'GET', `/v${v}/images/recreate_web/json`)).json() as { ContainerConfig?: { Volumes?: Record<string, unknown> } }
    assert.deepEqual(img.ContainerConfig?.Volumes, { '/data': {} }, `API ${v}`)
  }
  writeFileSync(join(proj, 'index.html'), 'v2\n')
  const out = await compose('up', '-d', '--build')
  assert.match(out, /Recreating recreate_web_1 \.\.\. done/)
  assert.equal(await until('v2 served', async () => { const body = await httpGet(port).catch(() => undefined); return body === 'v2\n' ? body : undefined }), 'v2\n')
  const list = (await request(socket, 'GET', '/containers/json?all=1')).json() as Array<{ Names: string[], State: string }>
  assert.deepEqual(list.map((c) => [c.Names[0], c.State]), [['/recreate_web_1', 'running']])
  await compose('down', '-v')
})
