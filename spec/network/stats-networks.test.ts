// Stats' `networks` (issue 23.6): per interface of the container's namespace, rx/tx bytes, packets, errors and drops,
// as docker-py's stats()['networks'] and the docker CLI's NET I/O column read them; none for --network host or none.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar } from '../helpers/engine.js'
import { missingTool, dockerOk, runTool, dockerPySkipReason } from '../helpers/tools.js'
import { parseNetDev } from '../../lib/runtime/net-stats.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed') ?? missingTool('iptables', ['-V'])

test('net-stats: /proc/<pid>/net/dev rows by interface', () => {
  const text = 'Inter-|   Receive                                                |  Transmit\n' +
    ' face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n' +
    '    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0\n' +
    '  eth0:    1296      12    1    2    0     0          0         0      726       9    3    4    0     0       0          0\n'
  assert.deepEqual(parseNetDev(text).get('eth0'), { rx_bytes: 1296, rx_packets: 12, rx_errors: 1, rx_dropped: 2, tx_bytes: 726, tx_packets: 9, tx_errors: 3, tx_dropped: 4 })
  assert.equal(parseNetDev(text).size, 2)
})

test('stats networks: every interface of the container\'s namespace, with docker-py and the docker CLI', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  const ok = dockerOk(socket)
  await ok('import', busyboxTar(), 'busybox:latest')
  await ok('network', 'create', 'side')
  await ok('run', '-d', '--name', 'talker', 'busybox', 'sleep', '600')
  await ok('network', 'connect', 'side', 'talker')
  // traffic on eth0: pings to the bridge's gateway
  const gw = (await ok('inspect', '--format', '{{.NetworkSettings.Networks.bridge.Gateway}}', 'talker')).trim()
  await ok('exec', 'talker', 'ping', '-c', '3', '-s', '1000', gw)
  await ok('run', '-d', '--name', 'hosted', '--network', 'host', 'busybox', 'sleep', '600')
  const py = dockerPySkipReason()
  if (py === null) {
    const r = await runTool('python3', ['-c', `
import docker, sys, json
c = docker.DockerClient(base_url="unix://" + sys.argv[1])
print(json.dumps({n: c.containers.get(n).stats(stream=False).get("networks") for n in ["talker", "hosted"]}))
`, socket])
    assert.equal(r.status, 0, r.stderr)
    const got = JSON.parse(r.stdout) as Record<string, Record<string, Record<string, number>> | null>
    assert.deepEqual(Object.keys(got.talker ?? {}).sort(), ['eth0', 'eth1'])
    const eth0 = got.talker?.eth0 ?? {}
    assert.deepEqual(Object.keys(eth0).sort(), ['rx_bytes', 'rx_dropped', 'rx_errors', 'rx_packets', 'tx_bytes', 'tx_dropped', 'tx_errors', 'tx_packets'])
    assert.ok((eth0.tx_bytes ?? 0) >= 3000 && (eth0.rx_bytes ?? 0) >= 3000 && (eth0.tx_packets ?? 0) >= 3, JSON.stringify(eth0))
    assert.equal(got.hosted, null)
  } else t.diagnostic(`docker-py part skipped: ${py}`)
  // the CLI's NET I/O column sums them (e.g. "3.2kB / 3.1kB")
  const netIo = (await dockerCli(socket, ['stats', '--no-stream', '--format', '{{.NetIO}}', 'talker'])).stdout.trim()
  assert.match(netIo, /^[\d.]+kB \/ [\d.]+kB$/)
  await ok('rm', '-f', 'talker', 'hosted')
  await ok('network', 'rm', 'side')
})
