// SIGHUP reloads the configuration file as dockerd does: the log level, registry mirrors and insecure registries
// change in the running daemon, what changed is logged, a broken file is refused with the running configuration
// kept, and the daemon never dies of it (nor of a SIGHUP during its start).
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { busyboxTar, cleanupDaemon, containerSkipReason, daemonNetworkArgs, request, tmpDir, uniqueNetworkOptions } from '../helpers/engine.js'
import { startRegistry } from '../registry/helpers.js'
import { createReadStream } from 'node:fs'
import { pingable, startDaemon } from './helpers.js'

const skip = containerSkipReason()

async function freeLoopbackPort (): Promise<number> {
  const net = await import('node:net')
  const s = net.createServer()
  await new Promise<void>((resolve) => { s.listen(0, '127.0.0.1', resolve) })
  const port = (s.address() as { port: number }).port
  await new Promise<void>((resolve) => { s.close(() => { resolve() }) })
  return port
}

describe('SIGHUP', { skip: skip ?? false }, () => {
  it('reloads the log level, then the mirrors (a pull goes through the new one), refuses a broken file, never dies', async (t) => {
    const dir = tmpDir()
    const net = uniqueNetworkOptions()
    const sock = join(dir, 'b.sock')
    const conf = join(dir, 'daemon.json')
    const closed = await freeLoopbackPort()
    writeFileSync(conf, JSON.stringify({ 'log-level': 'info', 'registry-mirrors': [`http://127.0.0.1:${closed}`] }))
    const d = startDaemon(['-H', `unix://${sock}`, '--data-root', join(dir, 'data'), '--exec-root', join(dir, 'run'), '--config-file', conf, ...daemonNetworkArgs(net)])
    t.after(async () => { await cleanupDaemon(d.child, dir, net) })
    // a SIGHUP while the daemon starts is applied once it runs
    for (let i = 0; i < 2000 && !existsSync(join(dir, 'data')) && d.child.exitCode === null; i++) await new Promise((resolve) => setTimeout(resolve, 5))
    d.child.kill('SIGHUP')
    await pingable(sock, d)
    await d.waitFor(/reloaded configuration from .*daemon\.json: nothing changed/)

    assert.equal(((await request(sock, 'GET', '/info')).json() as { Debug: boolean }).Debug, false)
    await request(sock, 'GET', '/_ping')
    assert.doesNotMatch(d.stderr(), /level=debug/, 'no debug records at info')
    writeFileSync(conf, JSON.stringify({ 'log-level': 'debug', 'registry-mirrors': [`http://127.0.0.1:${closed}`] }))
    d.child.kill('SIGHUP')
    await d.waitFor(/reloaded configuration from .*: log-level: info → debug"/)
    assert.equal(((await request(sock, 'GET', '/info')).json() as { Debug: boolean }).Debug, true)
    await request(sock, 'GET', '/version')
    await d.waitFor(/level=debug msg="GET \/version 200 \d+ bytes [\d.]+ ms client=unix socket/)

    // a registry with busybox as library/busybox: the mirror the reload adds
    const reg = await startRegistry(t)
    const host = new URL(reg.url).host
    const imp = await request(sock, 'POST', `/images/create?fromSrc=-&repo=${host}/library/busybox&tag=latest`, { raw: createReadStream(busyboxTar()), headers: { 'Content-Type': 'application/x-tar' } })
    assert.equal(imp.status, 200, imp.text)
    const push = await request(sock, 'POST', `/images/${host}/library/busybox/push?tag=latest`, { headers: { 'X-Registry-Auth': 'e30=' } })
    assert.doesNotMatch(push.text, /errorDetail/, push.text)
    assert.equal((await request(sock, 'DELETE', `/images/${host}/library/busybox:latest`)).status, 200)

    writeFileSync(conf, JSON.stringify({ 'log-level': 'info', 'registry-mirrors': [`http://127.0.0.1:${closed}`, reg.url] }))
    d.child.kill('SIGHUP')
    await d.waitFor(new RegExp(`log-level: debug → info; registry-mirrors: \\[http://127\\.0\\.0\\.1:${closed}\\] → \\[http://127\\.0\\.0\\.1:${closed}, ${reg.url.replace(/\./g, '\\.')}\\]`))
    const pull = await request(sock, 'POST', '/images/create?fromImage=busybox&tag=latest')
    assert.equal(pull.status, 200)
    assert.match(pull.text, /Status: Downloaded newer image for busybox:latest/)
    const img = (await request(sock, 'GET', '/images/busybox:latest/json')).json() as { RepoDigests: string[] }
    assert.match(img.RepoDigests[0] ?? '', /^busybox@sha256:/)
    await d.waitFor(new RegExp(`pull busybox:latest: mirror http://127\\.0\\.0\\.1:${closed} failed`))
    await d.waitFor(new RegExp(`pulled busybox:latest \\(sha256:[0-9a-f]{64}\\) from ${reg.url.replace(/\./g, '\\.')}: 1 layers, [\\d.]+ ?[kM]?B compressed, [\\d.]+ ?[kM]?B downloaded`))

    writeFileSync(conf, '{"log-level": ')
    d.child.kill('SIGHUP')
    await d.waitFor(/level=error msg="reload failed, the configuration in use is kept: unable to configure the daemon with file/)
    for (let i = 0; i < 5; i++) d.child.kill('SIGHUP')
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal((await request(sock, 'GET', '/_ping')).status, 200, 'alive after SIGHUPs')
    d.child.kill('SIGTERM')
    assert.equal(await d.exited(), 0)
    assert.ok(!existsSync(sock), 'its socket is gone at a clean stop')
  })
})
