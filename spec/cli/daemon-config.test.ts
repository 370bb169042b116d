// The daemon's configuration file (dockerd's daemon.json keys): every key Berth has is taken and honoured, an
// unknown key is refused by name, a setting both in the file and on the command line is an error (dockerd's rule),
// and a daemon configured only by its file runs with those settings (its JSON log parsed back line by line).
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { cleanupDaemon, containerSkipReason, createContainer, importBusybox, request, tmpDir, uniqueNetworkOptions } from '../helpers/engine.js'
import { berth, jsonRecords, pingable, startDaemon } from './helpers.js'

const skip = containerSkipReason()

function withConfig (t: { after: (fn: () => void) => void }, doc: unknown): { dir: string, conf: string } {
  const dir = tmpDir()
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  const conf = join(dir, 'daemon.json')
  writeFileSync(conf, typeof doc === 'string' ? doc : JSON.stringify(doc))
  return { dir, conf }
}

describe('daemon.json: keys, types and conflicts (--validate)', () => {
  it('takes every dockerd key Berth has', (t) => {
    const { conf } = withConfig(t, {
      hosts: ['unix:///run/berth-x.sock', 'tcp://127.0.0.1:2399'],
      'data-root': '/var/lib/berth-x',
      'exec-root': '/run/berth-x',
      pidfile: '/run/berth-x.pid',
      'log-level': 'warn',
      debug: false,
      'log-format': 'json',
      'insecure-registries': ['10.0.0.0/8', 'myregistry:5000'],
      'registry-mirrors': ['https://mirror.example:5000', 'http://127.0.0.1:5000/'],
      'default-runtime': 'crun',
      runtimes: { crun: { path: '/usr/bin/crun' } },
      bip: '10.99.0.1/24',
      'default-address-pools': [{ base: '10.98.0.0/16', size: 24 }],
      iptables: true,
      'log-driver': 'local',
      'log-opts': { 'max-size': '10m', 'max-file': '3' },
      'default-ulimits': { nofile: { Name: 'nofile', Hard: 4096, Soft: 2048 } },
      group: 'docker',
      tls: false,
      tlsverify: false,
      tlscacert: '/etc/berth/ca.pem',
      tlscert: '/etc/berth/cert.pem',
      tlskey: '/etc/berth/key.pem',
      icc: true,
      'userland-proxy': false,
      'init-path': '/usr/bin/tini',
      'bridge-name': 'berthx0',
      'network-prefix': 'BX'
    })
    const r = berth(['daemon', '--validate', '--config-file', conf])
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout, 'configuration OK\n')
  })

  it('refuses unknown keys by name', (t) => {
    const { conf } = withConfig(t, { 'data-root': '/x', 'storage-driver': 'zfs', 'live-restore': true })
    const r = berth(['daemon', '--validate', '--config-file', conf])
    assert.equal(r.status, 1)
    assert.match(r.stderr, /unable to configure the daemon with file .*daemon\.json: the following directives don't match any configuration option: storage-driver, live-restore/)
  })

  it('a key in the file and its flag on the command line is an error naming both values', (t) => {
    const { conf } = withConfig(t, { 'data-root': '/from/file', hosts: ['unix:///file.sock'], 'log-level': 'warn' })
    const r = berth(['daemon', '--validate', '--config-file', conf, '--data-root', '/from/flag', '-H', 'unix:///flag.sock'])
    assert.equal(r.status, 1)
    assert.match(r.stderr, /the following directives are specified both as a flag and in the configuration file: data-root: \(from flag: \/from\/flag, from file: \/from\/file\), hosts: \(from flag: \[unix:\/\/\/flag\.sock\], from file: \[unix:\/\/\/file\.sock\]\)/)
    // a flag for a key the file does not set is fine
    assert.equal(berth(['daemon', '--validate', '--config-file', conf, '--bip', '10.97.0.1/24']).status, 0)
  })

  it('refuses wrong types, bad values and bad JSON with the key', (t) => {
    const cases: Array<[unknown, RegExp]> = [
      [{ iptables: 'no' }, /invalid value for "iptables": true or false expected/],
      [{ hosts: 'unix:///x.sock' }, /invalid value for "hosts": a list of strings expected/],
      [{ 'default-address-pools': [{ base: '10.0.0.0/8' }] }, /invalid value for "default-address-pools"/],
      [{ 'registry-mirrors': ['ftp://mirror'] }, /invalid mirror: unsupported scheme "ftp"/],
      [{ 'registry-mirrors': ['https://mirror/v2/'] }, /invalid mirror: path, query, or fragment at end of the URI/],
      [{ 'log-driver': 'syslog' }, null as unknown as RegExp],
      [{ runtimes: { crun: { path: '/usr/bin/crun', runtimeArgs: [''] } } }, /invalid value for "runtimes\.crun\.runtimeArgs": a list of non-empty strings expected/],
      [{ 'default-ulimits': { nofile: { Name: 'nofile', Soft: 10, Hard: 5 } } }, /soft limit must be less than or equal to hard limit/],
      ['{"data-root": ', /unable to configure the daemon with file .*: .*JSON/],
      ['[1, 2]', /the configuration must be a JSON object/]
    ]
    for (const [doc, text] of cases) {
      if (text === null) continue
      const { conf } = withConfig(t, doc)
      const r = berth(['daemon', '--validate', '--config-file', conf])
      assert.equal(r.status, 1, JSON.stringify(doc))
      assert.match(r.stderr, text)
    }
  })

  it('the default file may be missing; a file named with --config-file may not', (t) => {
    const { dir } = withConfig(t, '{}')
    const r = berth(['daemon', '--validate', '--config-file', join(dir, 'missing.json')])
    assert.equal(r.status, 1)
    assert.match(r.stderr, /unable to configure the daemon with file .*missing\.json: ENOENT/)
    // an empty file is no settings, as dockerd reads one
    assert.equal(berth(['daemon', '--validate', '--config-file', '/dev/null']).status, 0)
  })
})

describe('a daemon configured by its file', { skip: skip ?? false }, () => {
  it('listens, writes its pidfile and logs JSON as the file says; containers get its log driver and ulimits', async (t) => {
    const dir = tmpDir()
    const net = uniqueNetworkOptions()
    const sock = join(dir, 'b.sock')
    const pidfile = join(dir, 'berth.pid')
    writeFileSync(join(dir, 'daemon.json'), JSON.stringify({
      hosts: [`unix://${sock}`],
      'data-root': join(dir, 'data'),
      'exec-root': join(dir, 'run'),
      pidfile,
      'log-format': 'json',
      'log-level': 'info',
      'log-driver': 'local',
      'log-opts': { 'max-size': '5m' },
      'default-ulimits': { nofile: { Name: 'nofile', Soft: 1234, Hard: 2345 } },
      group: '',
      'bridge-name': net.defaultBridge,
      bip: net.bip,
      'network-prefix': net.networkPrefix,
      'default-address-pools': net.defaultAddressPools
    }))
    const d = startDaemon(['--config-file', join(dir, 'daemon.json')])
    t.after(async () => { await cleanupDaemon(d.child, dir, net) })
    await pingable(sock, d)
    // (/_ping answers while the engine still boots; the pidfile is written once it has)
    await d.waitFor(/started: /)
    assert.equal(readFileSync(pidfile, 'utf8').trim(), String(d.child.pid))
    assert.equal(statSync(sock).mode & 0o777, 0o660)
    const info = (await request(sock, 'GET', '/info')).json() as { LoggingDriver: string, DockerRootDir: string }
    assert.equal(info.LoggingDriver, 'local')
    await importBusybox(sock)
    const id = await createContainer(sock, { Image: 'busybox', Cmd: ['sh', '-c', 'ulimit -n; ulimit -Hn; exit 3'] }, 'limits')
    const inspect = (await request(sock, 'GET', `/containers/${id}/json`)).json() as { HostConfig: { LogConfig: { Type: string, Config: Record<string, string> } } }
    assert.deepEqual(inspect.HostConfig.LogConfig, { Type: 'local', Config: { 'max-size': '5m' } })
    assert.equal((await request(sock, 'POST', `/containers/${id}/start`)).status, 204)
    const waited = (await request(sock, 'POST', `/containers/${id}/wait`)).json() as { StatusCode: number }
    assert.equal(waited.StatusCode, 3)
    const logs = (await request(sock, 'GET', `/containers/${id}/logs?stdout=1`)).body
    assert.match(logs.subarray(8).toString() + logs.toString(), /1234[\s\S]*2345/)
    assert.equal((await request(sock, 'DELETE', `/containers/${id}`)).status, 204)
    d.child.kill('SIGTERM')
    assert.equal(await d.exited(), 0)
    assert.ok(!existsSync(pidfile), 'the pidfile goes at a clean stop')
    // every line is a JSON record (level, msg, time), as dockerd's --log-format json
    const records = jsonRecords(d.stderr())
    for (const r of records) {
      assert.ok(['debug', 'info', 'warning', 'error', 'fatal'].includes(r.level), r.level)
      assert.equal(typeof r.msg, 'string')
      assert.ok(!Number.isNaN(Date.parse(r.time)), r.time)
    }
    const msgs = records.map((r) => r.msg)
    assert.ok(msgs.some((m) => m.startsWith(`Berth `) && m.includes(`data root ${join(dir, 'data')}`) && m.includes('runtime runc') && m.includes(`listening on unix://${sock}`)), 'the start line')
    assert.ok(msgs.some((m) => /^container [0-9a-f]{12} \(limits\) started/.test(m)), 'container start')
    assert.ok(msgs.some((m) => /^container [0-9a-f]{12} \(limits\) exited with code 3$/.test(m)), 'container exit with its code')
    assert.ok(msgs.some((m) => /^container [0-9a-f]{12} \(limits\) removed$/.test(m)), 'container removal')
    assert.ok(msgs.includes('SIGTERM received, shutting down (containers keep running)'))
  })
})
