// Issue 21.10: what serves a published port does so without root's rights. A client holds a connection to a
// published port open; the host process at the other end of it (found as the review found the forwarder: by the
// socket, then its /proc status) runs as an unprivileged user with no capability and cannot gain any. With the
// monitors serving (the default: loopback is theirs, other addresses DNAT) and without iptables (they serve all).
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { execFileSync } from 'node:child_process'
import { startEngine, containerSkipReason, hasDockerCli, busyboxTar } from '../helpers/engine.js'
import { dockerOk, missingTool } from '../helpers/tools.js'
import { freeTcpPort, httpGet } from '../helpers/net.js'
import { until } from '../helpers/poll.js'
import { procInfo } from '../helpers/ports.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed') ?? missingTool('ss', ['-V'])

/** PIDs of the host processes owning the server side of established connections on the host port. */
function servers (port: number): number[] {
  const out = execFileSync('ss', ['-Htnp', 'state', 'established', `( sport = :${port} )`], { encoding: 'utf8' })
  return [...new Set([...out.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1])))]
}

async function scenario (t: TestContext, iptables: boolean): Promise<void> {
  const { socket } = await startEngine(t, { options: { iptables } })
  const docker = dockerOk(socket)
  await docker('import', busyboxTar(), 'busybox:latest')
  const port = await freeTcpPort()
  await docker('run', '-d', '--name', 'web', '-p', `${port}:80`, 'busybox', 'httpd', '-f', '-p', '80', '-h', '/etc')
  // the server answers first (before it listens, the relay closes what it accepted), then a connection stays open
  await until('the published port answering', async () => await httpGet(port, '/hostname').then(() => true, () => false), 10_000, 100)
  const client = await until('a connection to the published port', async () => await new Promise<net.Socket | null>((resolve) => {
    const c = net.connect(port, '127.0.0.1')
    c.once('connect', () => { resolve(c) })
    c.once('error', () => { resolve(null) })
  }), 10_000, 100)
  t.after(() => { client.destroy() })
  const pids = await until('the process serving it', async () => { const p = servers(port); return p.length > 0 ? p : null }, 5000)
  for (const pid of pids) {
    const p = procInfo(pid)
    assert.ok(p !== null, `process ${pid}`)
    assert.notEqual(p.uid, 0, `${p.name} (${pid}) serves port ${port} as root`)
    assert.equal(p.capEff, 0n, `${p.name} (${pid}) serves port ${port} with capabilities ${p.capEff.toString(16)}`)
    assert.equal(p.noNewPrivs, true, `${p.name} (${pid}) could gain privileges`)
  }
}

test('the process serving a published port has no root rights (default)', { skip: skip ?? false }, async (t) => {
  await scenario(t, true)
})

test('the process serving a published port has no root rights (--iptables=false)', { skip: skip ?? false }, async (t) => {
  await scenario(t, false)
})
