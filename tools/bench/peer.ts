// The peer engine of the run and memory rows: Debian's dockerd 20.10 with its default bridge networking (its own
// docker0, iptables chains and docker-proxy), started inside a network namespace of its own so that its bridge and
// chains never touch the host's. `ip netns exec` mounts a fresh /sys, so the cgroup hierarchies are mounted again
// inside first (the host's layout, read from /proc/self/mountinfo). The CLI reaches it over a Unix socket in a temp
// dir on the host filesystem; a TCP listener on the namespace's 127.0.0.1 serves wrk, run inside the namespace.
// stopPeer() removes everything: the daemon (and its containerd and shims, all in that namespace), the namespace,
// the temp dir.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import http from 'node:http'

export interface Peer {
  /** The namespace dockerd runs in. */
  netns: string
  dir: string
  socket: string
  /** Its TCP address inside the namespace (reach it with `ip netns exec <netns> …`). */
  tcp: string
  child: ChildProcess
  /** dockerd's PID (read from its pidfile). */
  pid: number
}

/** The cgroup v1 controllers and the v2 mount of this host, as `mount` arguments, from /proc/self/mountinfo. */
function cgroupMounts (): string[] {
  const lines: string[] = []
  for (const l of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [pre, post] = l.split(' - ')
    if (pre === undefined || post === undefined) continue
    const mountPoint = pre.split(' ')[4] ?? ''
    const [fstype, , superOpts] = post.split(' ')
    if (!mountPoint.startsWith('/sys/fs/cgroup/')) continue
    if (fstype === 'cgroup') {
      const opts = (superOpts ?? '').split(',').filter((o) => o !== 'rw' && o !== 'ro')
      lines.push(`mkdir -p ${mountPoint} && mount -t cgroup -o ${opts.join(',')} cgroup ${mountPoint}`)
    } else if (fstype === 'cgroup2') {
      lines.push(`mkdir -p ${mountPoint} && mount -t cgroup2 cgroup2 ${mountPoint}`)
    }
  }
  if (lines.length === 0) lines.push('mount -t cgroup2 cgroup2 /sys/fs/cgroup')
  else lines.unshift('mount -t tmpfs -o mode=755 cgroup_root /sys/fs/cgroup')
  return lines
}

async function pingOk (socket: string): Promise<boolean> {
  return await new Promise((resolve) => {
    http.get({ socketPath: socket, path: '/_ping' }, (res) => { res.resume(); resolve(res.statusCode === 200) }).on('error', () => { resolve(false) })
  })
}

/** Starts dockerd in a new network namespace; resolves once it answers /_ping (throws after about 60 s). */
export async function startPeer (): Promise<Peer> {
  const tag = randomBytes(3).toString('hex')
  const netns = `bperf${tag}`
  const dir = mkdtempSync(join(tmpdir(), 'berth-peer-'))
  const socket = join(dir, 'd.sock')
  execFileSync('ip', ['netns', 'add', netns])
  execFileSync('ip', ['netns', 'exec', netns, 'ip', 'link', 'set', 'lo', 'up'])
  const script = ['set -e', ...cgroupMounts(),
    `exec dockerd --data-root ${dir}/data --exec-root ${dir}/run --pidfile ${dir}/d.pid -H unix://${socket} -H tcp://127.0.0.1:2375`].join('\n')
  writeFileSync(join(dir, 'start.sh'), script + '\n')
  const child = spawn('ip', ['netns', 'exec', netns, 'sh', join(dir, 'start.sh')], { stdio: ['ignore', 'ignore', 'pipe'] })
  let log = ''
  child.stderr?.on('data', (d: Buffer) => { if (log.length < 65536) log += d.toString() })
  for (let i = 0; i < 600 && !(existsSync(socket) && await pingOk(socket)); i++) {
    if (child.exitCode !== null) break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  if (!await pingOk(socket)) {
    await stopPeer({ netns, dir, socket, tcp: '', child, pid: 0 })
    throw new Error(`dockerd did not start in ${netns}:\n${log.slice(-2000)}`)
  }
  const pid = Number(readFileSync(join(dir, 'd.pid'), 'utf8').trim())
  return { netns, dir, socket, tcp: '127.0.0.1:2375', child, pid }
}

/** Stops the peer's containers and daemon, then removes its namespace and dir. */
export async function stopPeer (p: Peer): Promise<void> {
  try {
    const ids = execFileSync('docker', ['ps', '-aq'], { env: { ...process.env, DOCKER_HOST: `unix://${p.socket}` }, encoding: 'utf8', timeout: 30_000 }).split('\n').filter((x) => x !== '')
    if (ids.length > 0) execFileSync('docker', ['rm', '-f', ...ids], { env: { ...process.env, DOCKER_HOST: `unix://${p.socket}` }, stdio: 'ignore', timeout: 120_000 })
  } catch { /* the daemon is gone already */ }
  if (p.child.exitCode === null && p.child.signalCode === null) {
    const exited = new Promise((resolve) => p.child.once('exit', resolve))
    if (p.pid > 0) { try { process.kill(p.pid, 'SIGTERM') } catch { /* gone */ } } else p.child.kill('SIGTERM')
    const timer = setTimeout(() => { if (p.pid > 0) { try { process.kill(p.pid, 'SIGKILL') } catch { /* gone */ } } }, 20_000)
    await exited
    clearTimeout(timer)
  }
  // whatever still runs in the namespace (a shim, a proxy) goes with it
  try {
    const left = execFileSync('ip', ['netns', 'pids', p.netns], { encoding: 'utf8' }).split('\n').filter((x) => x !== '').map(Number)
    for (const pid of left) { try { process.kill(pid, 'SIGKILL') } catch { /* gone */ } }
  } catch { /* no namespace */ }
  try { execFileSync('ip', ['netns', 'del', p.netns]) } catch { /* gone */ }
  // its mounts lived in the mount namespace of `ip netns exec`, gone with its last process
  rmSync(p.dir, { recursive: true, force: true })
}
