// docker-compose 1.29 (a web service with a published port and a client fetching it by service name) and docker-py's
// client.networks against the engine.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar } from '../helpers/engine.js'
import { runTool, composeEnv, composeOk, composeSkipReason, dockerPySkipReason, missingTool } from '../helpers/tools.js'
import { freeTcpPort, httpGet } from '../helpers/net.js'

const base = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed') ?? missingTool('iptables', ['-V'])
const composeSkip = base ?? composeSkipReason()
const pySkip = base ?? dockerPySkipReason()

test('docker-compose 1.29: up -d, ps, logs, exec, down', { skip: composeSkip ?? false }, async (t) => {
  const { socket, dir } = await startEngine(t)
  assert.equal((await dockerCli(socket, ['import', busyboxTar(), 'busybox:latest'])).status, 0)
  const port = await freeTcpPort()
  const proj = join(dir, 'proj')
  mkdirSync(proj)
  writeFileSync(join(proj, 'docker-compose.yml'), [
    'version: "3"',
    'services:',
    '  web:',
    '    image: busybox',
    '    command: httpd -f -p 80 -h /etc',
    '    ports:',
    `      - "${port}:80"`,
    '  client:',
    '    image: busybox',
    '    command: sh -c "until wget -qO- http://web/hostname; do sleep 0.2; done; sleep 300"',
    ''
  ].join('\n'))
  const env = composeEnv(socket, 'nt')
  const compose = composeOk(env, proj)
  assert.match(await compose('up', '-d'), /Creating network "nt_default" with the default driver/)
  const ps = await compose('ps')
  assert.match(ps, new RegExp(`nt_web_1 .* Up .*0\\.0\\.0\\.0:${port}->80/tcp`))
  assert.match(ps, /nt_client_1 .* Up/)
  const webId = (await dockerCli(socket, ['inspect', '--format', '{{.Id}}', 'nt_web_1'])).stdout.trim().slice(0, 12)
  let logs = ''
  for (let i = 0; i < 50 && !logs.includes(webId); i++) logs = await compose('logs', '--no-color', 'client')
  assert.match(logs, new RegExp(`client_1 +\\| ${webId}`))
  assert.equal((await compose('exec', '-T', 'client', 'wget', '-qO-', 'http://web/hostname')).trim(), webId)
  assert.equal(await httpGet(port, '/hostname'), `${webId}\n`)
  assert.match(await compose('down'), /Removing network nt_default/)
  assert.doesNotMatch((await dockerCli(socket, ['network', 'ls'])).stdout, /nt_default/)
})

test('docker-py: client.networks create, connect, list, remove', { skip: pySkip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  assert.equal((await dockerCli(socket, ['import', busyboxTar(), 'busybox:latest'])).status, 0)
  const sub = `10.${200 + Math.floor(Math.random() * 50)}.${Math.floor(Math.random() * 256)}`
  const script = `
import docker, sys
c = docker.DockerClient(base_url="unix://" + sys.argv[1])
ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=sys.argv[2] + ".0/24")])
n = c.networks.create("pynet", driver="bridge", ipam=ipam, labels={"py": "1"})
ct = c.containers.run("busybox", "sleep 60", detach=True, name="pyc")
n.connect(ct, aliases=["pa"], ipv4_address=sys.argv[2] + ".77")
n.reload()
print(sorted(x.name for x in c.networks.list(filters={"label": "py=1"})))
print([x.name for x in n.containers])
ct.reload()
print(ct.attrs["NetworkSettings"]["Networks"]["pynet"]["IPAddress"])
print(ct.exec_run("ip -o -4 addr show eth1").output.decode().split()[3])
n.disconnect(ct)
ct.remove(force=True)
n.remove()
print(len(c.networks.list(names=["pynet"])))
`
  const r = await runTool('python3', ['-c', script, socket, sub])
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout, `['pynet']\n['pyc']\n${sub}.77\n${sub}.77/24\n0\n`)
})

test('docker-compose 1.29: a front and a back network; the app on both resolves each side, links by alias', { skip: composeSkip ?? false }, async (t) => {
  const { socket, dir } = await startEngine(t)
  assert.equal((await dockerCli(socket, ['import', busyboxTar(), 'busybox:latest'])).status, 0)
  const proj = join(dir, 'tiers')
  mkdirSync(proj)
  writeFileSync(join(proj, 'docker-compose.yml'), [
    'version: "2.4"',
    'services:',
    '  db:',
    '    image: busybox',
    '    command: httpd -f -p 80 -h /etc',
    '    networks: [back]',
    '  web:',
    '    image: busybox',
    '    command: httpd -f -p 80 -h /etc',
    '    networks: [front]',
    '  app:',
    '    image: busybox',
    '    command: sleep 300',
    '    networks: [front, back]',
    '    links: ["db:database"]',
    'networks:',
    '  front: {}',
    '  back: {}',
    ''
  ].join('\n'))
  const env = composeEnv(socket, 'tr')
  const compose = composeOk(env, proj)
  await compose('up', '-d')
  const exec = async (svc: string, cmd: string): Promise<{ status: number, out: string }> => {
    const r = await runTool('docker-compose', ['exec', '-T', svc, 'sh', '-c', cmd], { env, cwd: proj })
    return { status: r.status, out: r.out }
  }
  const hostname = async (svc: string): Promise<string> => (await dockerCli(socket, ['inspect', '--format', '{{.Config.Hostname}}', `tr_${svc}_1`])).stdout.trim()
  const [db, web] = [await hostname('db'), await hostname('web')]
  // the app reaches both tiers by service name (its resolver answers for both of its networks) and db by its link alias
  for (const [name, want] of [['db', db], ['web', web], ['database', db], ['tr_db_1', db]] as const) {
    const r = await exec('app', `for i in 1 2 3 4 5 6 7 8 9 10; do wget -qO- http://${name}/hostname && exit 0; sleep 0.3; done; exit 1`)
    assert.equal(r.status, 0, `app → ${name}: ${r.out}`)
    assert.equal(r.out.trim(), want)
  }
  // each tier sees its own network only; the link alias is the app's alone
  assert.notEqual((await exec('web', 'nslookup -timeout=2 db')).status, 0)
  assert.notEqual((await exec('db', 'nslookup -timeout=2 web')).status, 0)
  assert.notEqual((await exec('web', 'nslookup -timeout=2 database')).status, 0)
  assert.match((await exec('app', 'cat /etc/resolv.conf')).out, /^nameserver 127\.0\.0\.11$/m)
  await compose('down')
})
