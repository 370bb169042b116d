// A build whose base image is pulled from a (loopback) registry that wants Basic credentials: X-Registry-Config
// carries them, the pull's progress records appear in the build stream; without them the build fails in-band.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { startEngine, containerSkipReason, busyboxTar, request } from '../helpers/engine.js'
import { registrySkipReason, startDistribution, startProxy, seedImage, makeTar } from '../images/registry-fixture.js'

const skip = containerSkipReason() ?? registrySkipReason()

test('FROM a private registry image, with X-Registry-Config', { skip: skip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  await seedImage(reg.url, 'base/bb', { layers: [readFileSync(busyboxTar())], tag: 'v1' })
  const proxy = await startProxy(t, reg.url)
  const good = `Basic ${Buffer.from('bob:hunter2').toString('base64')}`
  proxy.hooks.push((req, res) => {
    if (req.headers.authorization === good) return false
    res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="berth test"', 'Content-Type': 'application/json' })
    res.end('{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}')
    return true
  })
  const { socket } = await startEngine(t)
  const context = makeTar([{ name: 'Dockerfile', body: `FROM ${proxy.host}/base/bb:v1\nRUN echo pulled-and-ran\n` }])
  const build = async (headers: Record<string, string>): ReturnType<typeof request> =>
    await request(socket, 'POST', '/v1.50/build?t=from-private', { raw: context, headers: { 'Content-Type': 'application/x-tar', ...headers } })

  const denied = await build({})
  const last = JSON.parse(denied.text.trim().split('\r\n').pop() as string) as { error: string }
  assert.match(last.error, /no basic auth credentials/)

  const config = Buffer.from(JSON.stringify({ [proxy.host]: { username: 'bob', password: 'hunter2', serveraddress: proxy.host } })).toString('base64url')
  const ok = await build({ 'X-Registry-Config': config })
  assert.equal(ok.status, 200)
  assert.match(ok.text, /"status":"Pulling from base\/bb","id":"v1"/)
  assert.match(ok.text, /"status":"Status: Downloaded newer image for [^"]+\/base\/bb:v1"/)
  assert.match(ok.text, /\{"stream":"pulled-and-ran\\n"\}/)
  assert.match(ok.text, /Successfully tagged from-private:latest/)
  // pull=1 asks the registry again although the image is local
  const again = await request(socket, 'POST', '/v1.50/build?pull=1', { raw: context, headers: { 'Content-Type': 'application/x-tar', 'X-Registry-Config': config } })
  assert.match(again.text, /"status":"Status: Image is up to date for [^"]+\/base\/bb:v1"/, again.text)
  assert.match(again.text, /Successfully built/)
  // and a pull that fails fails the build (dockerd's --pull)
  const denied2 = await request(socket, 'POST', '/v1.50/build?pull=1', { raw: context, headers: { 'Content-Type': 'application/x-tar' } })
  assert.match((JSON.parse(denied2.text.trim().split('\r\n').pop() as string) as { error: string }).error, /no basic auth credentials/)
})
