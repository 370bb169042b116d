// Tests for the per-container monitor dist/berth-shim (lib/runtime/shim/berth-shim.c) against a real runc.
// They need root, runc and a static busybox; otherwise they are skipped.
import { test, describe } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { connect } from 'node:net'
import type { Readable } from 'node:stream'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const SHIM = fileURLToPath(new URL('../../berth-shim', import.meta.url))
const BUSYBOX = '/usr/bin/busybox'
const RUNC = ['/usr/sbin/runc', '/usr/bin/runc', '/usr/local/sbin/runc', '/usr/local/bin/runc'].find((p) => existsSync(p))
const APPLETS = ['sh', 'echo', 'cat', 'sleep', 'stty', 'true']
const TIMEOUT_MS = 20_000

const MSG_STDIN = 1
const MSG_CLOSE_STDIN = 2
const MSG_RESIZE = 3

function skipReason (): string | undefined {
  if (process.platform !== 'linux') return 'Linux only'
  if (process.getuid?.() !== 0) return 'needs root'
  if (RUNC === undefined) return 'runc not installed'
  if (!existsSync(BUSYBOX)) return `${BUSYBOX} not installed`
  return undefined
}
const SKIP = skipReason()

interface ExitInfo { exitCode: number, exitedAtNs: string, signal: number }
interface LogRecord { stream: number, flags: number, ts: bigint, data: Buffer }
interface SyncReply { pid?: number, error?: string }

interface Shim {
  child: ChildProcess
  pid: number
  /** The one line the shim writes to fd 3. */
  reply: Promise<SyncReply>
  /** Resolves with the shim's exit code (only while the child is not unref()'d). */
  exited: Promise<number | null>
}

interface ShimOptions { tty?: boolean, stdin?: boolean, exec?: string, state?: string, log?: string, start?: boolean, rootfs?: string, overlay?: string }

let seq = 0

/** A temp dir with a busybox bundle, a runc root and a state dir; removed (with the container) after the test. */
class Sandbox {
  readonly dir: string
  readonly id: string
  readonly bundle: string
  readonly state: string
  readonly runcRoot: string
  readonly log: string
  readonly startNs = BigInt(Date.now() - 1000) * 1_000_000n
  private readonly pids: number[] = []

  constructor (t: { after: (fn: () => void) => void }, args: string[], terminal = false) {
    this.dir = mkdtempSync(join(tmpdir(), 'berth-shim-test-'))
    this.id = `berth-shim-test-${process.pid}-${++seq}`
    this.bundle = join(this.dir, 'bundle')
    this.state = join(this.dir, 'state')
    this.runcRoot = join(this.dir, 'runc')
    this.log = join(this.dir, 'container.log')
    t.after(() => this.cleanup())
    const bin = join(this.bundle, 'rootfs', 'bin')
    mkdirSync(bin, { recursive: true })
    mkdirSync(this.state)
    copyFileSync(BUSYBOX, join(bin, 'busybox'))
    for (const a of APPLETS) symlinkSync('busybox', join(bin, a))
    this.runc('spec', '--bundle', this.bundle)
    const cfgPath = join(this.bundle, 'config.json')
    const cfg = JSON.parse(readFileSync(cfgPath, 'utf8'))
    cfg.process.terminal = terminal
    cfg.process.args = args
    writeFileSync(cfgPath, JSON.stringify(cfg, null, 2))
  }

  runc (...args: string[]): string {
    const r = spawnSync(RUNC!, ['--root', this.runcRoot, ...args], { encoding: 'utf8' })
    if (r.status !== 0) throw new Error(`runc ${args.join(' ')} failed (${r.status}): ${r.stderr}`)
    return r.stdout
  }

  /** A process.json for `runc exec`, derived from the bundle's process. */
  processJson (args: string[], terminal = false): string {
    const cfg = JSON.parse(readFileSync(join(this.bundle, 'config.json'), 'utf8'))
    const p = join(this.dir, `process-${++seq}.json`)
    writeFileSync(p, JSON.stringify({ ...cfg.process, args, terminal }))
    return p
  }

  spawnShim (o: ShimOptions = {}): Shim {
    assert.ok(existsSync(SHIM), `${SHIM} missing: run npm run build`)
    const args = ['--id', this.id, '--bundle', this.bundle, '--state', o.state ?? this.state,
      '--runtime', RUNC!, '--runtime-root', this.runcRoot, '--log', o.log ?? this.log]
    if (o.tty === true) args.push('--tty')
    if (o.stdin === true) args.push('--stdin')
    if (o.exec !== undefined) args.push('--exec', o.exec)
    if (o.start === true) args.push('--start')
    if (o.rootfs !== undefined) args.push('--rootfs', o.rootfs)
    if (o.overlay !== undefined) args.push('--overlay', o.overlay)
    const child = spawn(SHIM, args, { detached: true, stdio: ['ignore', 'ignore', 'ignore', 'pipe'] })
    assert.ok(child.pid !== undefined, 'shim did not start')
    this.pids.push(child.pid)
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
    const reply = new Promise<SyncReply>((resolve, reject) => {
      const chunks: Buffer[] = []
      const fd3 = child.stdio[3] as Readable
      fd3.on('data', (c: Buffer) => chunks.push(c))
      fd3.once('error', reject)
      fd3.once('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        const nl = text.indexOf('\n')
        if (nl < 0) reject(new Error(`no sync line from the shim: ${JSON.stringify(text)}`))
        else resolve(JSON.parse(text.slice(0, nl)) as SyncReply)
      })
    })
    return { child, pid: child.pid, reply, exited }
  }

  /** Spawns the shim for the container, checks the sync reply and starts the container. */
  async createAndStart (o: ShimOptions = {}): Promise<Shim> {
    const shim = this.spawnShim(o)
    const reply = await shim.reply
    assert.equal(reply.error, undefined)
    assert.ok(typeof reply.pid === 'number' && reply.pid > 0, `bad sync reply ${JSON.stringify(reply)}`)
    await this.start()
    return shim
  }

  /**
   * `runc start`. A container that exits at once can be reaped and deleted by the shim while
   * `runc start` is still cleaning up (it then fails on exec.fifo); that counts as started
   * when exit.json shows up, which is what the daemon has to do as well.
   */
  async start (): Promise<void> {
    try {
      this.runc('start', this.id)
    } catch (err) {
      await waitFor(() => existsSync(join(this.state, 'exit.json')), 'exit.json after a failed start', 2000).catch(() => { throw err })
    }
  }

  async waitExit (state = this.state): Promise<ExitInfo> {
    const p = join(state, 'exit.json')
    await waitFor(() => existsSync(p), `exit.json in ${state}`)
    return JSON.parse(readFileSync(p, 'utf8')) as ExitInfo
  }

  records (log = this.log): LogRecord[] {
    return parseLog(readFileSync(log))
  }

  private cleanup (): void {
    spawnSync(RUNC!, ['--root', this.runcRoot, 'delete', '--force', this.id], { stdio: 'ignore' })
    for (const pid of this.pids) {
      try { process.kill(pid, 'SIGKILL') } catch { /* already gone */ }
    }
    rmSync(this.dir, { recursive: true, force: true })
  }
}

async function waitFor (cond: () => boolean, what: string, timeoutMs = TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

function parseLog (buf: Buffer): LogRecord[] {
  const out: LogRecord[] = []
  let off = 0
  while (off < buf.length) {
    assert.ok(off + 16 <= buf.length, `truncated record header at ${off}`)
    const stream = buf[off]!
    assert.ok(stream === 1 || stream === 2, `bad stream ${stream} at ${off}`)
    const flags = buf[off + 1]!
    assert.ok(flags <= 2, `bad flags ${flags} at ${off}`)
    assert.deepEqual([...buf.subarray(off + 2, off + 4)], [0, 0], 'padding bytes must be zero')
    const len = buf.readUInt32BE(off + 4)
    assert.ok(flags === 2 ? len === 0 : len > 0 && len <= 32 * 1024, `bad payload length ${len} with flags ${flags}`)
    const ts = buf.readBigUInt64BE(off + 8)
    const data = buf.subarray(off + 16, off + 16 + len)
    assert.equal(data.length, len, 'truncated payload')
    // cut at newlines: a line record holds exactly one line; a piece (1) holds none
    const nl = data.indexOf(10)
    if (flags === 0) assert.equal(nl, len - 1, `a line record ends at its only newline: ${JSON.stringify(data.toString())}`)
    else assert.equal(nl, -1, 'a piece holds no newline')
    out.push({ stream, flags, ts, data })
    off += 16 + len
  }
  return out
}

function text (records: LogRecord[], stream?: number): string {
  return Buffer.concat(records.filter((r) => stream === undefined || r.stream === stream).map((r) => r.data)).toString('utf8')
}

function message (type: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const h = Buffer.alloc(5)
  h[0] = type
  h.writeUInt32BE(payload.length, 1)
  return Buffer.concat([h, payload])
}

function resize (rows: number, cols: number): Buffer {
  const p = Buffer.alloc(4)
  p.writeUInt16BE(rows, 0)
  p.writeUInt16BE(cols, 2)
  return message(MSG_RESIZE, p)
}

interface AttachClient {
  send: (b: Buffer) => void
  received: () => Buffer
  /** Resolves when the shim closes the connection; with whether exit.json existed at that moment. */
  closed: Promise<{ exitJsonExisted: boolean }>
}

async function attach (state: string): Promise<AttachClient> {
  const sock = connect(join(state, 'attach.sock'))
  await new Promise<void>((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject) })
  const chunks: Buffer[] = []
  sock.on('data', (c: Buffer) => chunks.push(c))
  const closed = new Promise<{ exitJsonExisted: boolean }>((resolve) => {
    sock.once('end', () => {
      const exitJsonExisted = existsSync(join(state, 'exit.json'))
      sock.destroy()
      resolve({ exitJsonExisted })
    })
    sock.once('error', () => resolve({ exitJsonExisted: existsSync(join(state, 'exit.json')) }))
  })
  return { send: (b) => { sock.write(b) }, received: () => Buffer.concat(chunks), closed }
}

function assertExit (info: ExitInfo, sb: Sandbox, exitCode: number, signal = 0): void {
  assert.equal(info.exitCode, exitCode)
  assert.equal(info.signal, signal)
  assert.match(info.exitedAtNs, /^[0-9]+$/)
  const at = BigInt(info.exitedAtNs)
  assert.ok(at >= sb.startNs && at <= BigInt(Date.now() + 1000) * 1_000_000n, `exitedAtNs ${at} out of range`)
}

describe('berth-shim', { timeout: 120_000 }, () => {
  test('logs stdout and stderr as framed records and records exit code 0', async (t) => {
    if (SKIP !== undefined) { t.skip(SKIP); return }
    const sb = new Sandbox(t, ['sh', '-c', 'echo out; echo err >&2'])
    const shim = await sb.createAndStart()
    assert.equal(readFileSync(join(sb.state, 'shim.pid'), 'utf8').trim(), String(shim.pid))
    assert.equal(await shim.exited, 0)
    assertExit(await sb.waitExit(), sb, 0)
    const recs = sb.records()
    assert.equal(text(recs, 1), 'out\n')
    assert.equal(text(recs, 2), 'err\n')
    const now = BigInt(Date.now() + 1000) * 1_000_000n
    for (const r of recs) assert.ok(r.ts >= sb.startNs && r.ts <= now, `timestamp ${r.ts} out of range`)
    assert.ok(!existsSync(join(sb.state, 'attach.sock')), 'attach.sock must be removed')
    assert.ok(!existsSync(join(sb.state, 'console.sock')), 'console.sock must not exist')
    assert.throws(() => sb.runc('state', sb.id), 'the container must have been deleted')
  })

  test('--start runs the process in one runtime call; --rootfs detaches the root filesystem mount before exit.json', async (t) => {
    if (SKIP !== undefined) { t.skip(SKIP); return }
    const sb = new Sandbox(t, ['sh', '-c', 'echo started; exit 6'])
    const rootfs = join(sb.bundle, 'rootfs')
    const mounted = (): boolean => readFileSync('/proc/self/mountinfo', 'utf8').split('\n').some((l) => l.split(' ')[4] === rootfs)
    execFileSync('mount', ['--bind', rootfs, rootfs])
    t.after(() => { if (mounted()) execFileSync('umount', ['-l', rootfs]) })
    assert.ok(mounted())
    const shim = sb.spawnShim({ start: true, rootfs })
    const reply = await shim.reply
    assert.ok(typeof reply.pid === 'number' && reply.pid > 0, `bad sync reply ${JSON.stringify(reply)}`)
    // no `runc start`: the process runs (and here ends) on its own
    assertExit(await sb.waitExit(), sb, 6)
    assert.equal(mounted(), false, 'the rootfs mount must be gone once exit.json exists')
    assert.equal(await shim.exited, 0)
    assert.equal(text(sb.records(), 1), 'started\n')
    assert.throws(() => sb.runc('state', sb.id), 'the runtime record must be deleted when the shim is done')
  })

  test('--overlay: the shim mounts the root filesystem itself, detaches it at exit, and after a failed start', async (t) => {
    if (SKIP !== undefined) { t.skip(SKIP); return }
    for (const args of [['sh', '-c', 'cat /bin/lower.txt; echo new > /created'], ['/no-such-binary']]) {
      const sb = new Sandbox(t, args)
      const rootfs = join(sb.bundle, 'rootfs')
      const lower = join(sb.dir, 'lower')
      const upper = join(sb.dir, 'upper')
      renameSync(rootfs, lower)
      const cfgPath = join(sb.bundle, 'config.json')
      writeFileSync(cfgPath, JSON.stringify({ ...JSON.parse(readFileSync(cfgPath, 'utf8')), root: { path: 'rootfs', readonly: false } }))
      writeFileSync(join(lower, 'bin', 'lower.txt'), 'from the lower layer\n')
      for (const d of [rootfs, upper, join(sb.dir, 'work')]) mkdirSync(d)
      const mounted = (): boolean => readFileSync('/proc/self/mountinfo', 'utf8').split('\n').some((l) => l.split(' ')[4] === rootfs)
      t.after(() => { if (mounted()) execFileSync('umount', ['-l', rootfs]) })
      const shim = sb.spawnShim({ start: true, rootfs, overlay: `lowerdir=${lower},upperdir=${upper},workdir=${join(sb.dir, 'work')}` })
      const reply = await shim.reply
      if (args[0] === 'sh') {
        assert.ok(typeof reply.pid === 'number' && reply.pid > 0, `bad sync reply ${JSON.stringify(reply)}`)
        assertExit(await sb.waitExit(), sb, 0)
        assert.equal(mounted(), false, 'the rootfs mount must be gone once exit.json exists')
        assert.equal(text(sb.records(), 1), 'from the lower layer\n')
        assert.equal(readFileSync(join(upper, 'created'), 'utf8'), 'new\n', 'writes land in the upper directory')
      } else {
        assert.match(String(reply.error), /no-such-binary/)
        assert.equal(mounted(), false, 'a failed start leaves no mount behind')
      }
      assert.equal(await shim.exited, args[0] === 'sh' ? 0 : 1)
    }
  })

  test('records a non-zero exit code', async (t) => {
    if (SKIP !== undefined) { t.skip(SKIP); return }
    const sb = new Sandbox(t, ['sh', '-c', 'exit 3'])
    const shim = await sb.createAndStart()
    assert.equal(await shim.exited, 0)
    assertExit(await sb.waitExit(), sb, 3)
  })

  test('survives SIGTERM, drops malformed clients, records 137 after runc kill KILL', async (t) => {
    if (SKIP !== undefined) { t.skip(SKIP); return }
    const sb = new Sandbox(t, ['sleep', '1000'])
    const shim = await sb.createAndStart()
    const bad = await attach(sb.state)
    bad.send(message(9, Buffer.from('x')))
    assert.deepEqual(await bad.closed, { exitJsonExisted: false })
    const huge = await attach(sb.state)
    const h = Buffer.alloc(5)
    h[0] = MSG_STDIN
    h.writeUInt32BE(2 * 1024 * 1024, 1)
    huge.send(h)
    assert.deepEqual(await huge.closed, { exitJsonExisted: false })
    process.kill(shim.pid, 'SIGTERM')
    process.kill(shim.pid, 'SIGHUP')
    process.kill(shim.pid, 'SIGINT')
    await new Promise((resolve) => setTimeout(resolve, 200))
    process.kill(shim.pid, 0) // still alive
    assert.match(sb.runc('state', sb.id), /"status": "running"/)
    sb.runc('kill', sb.id, 'KILL')
    assert.equal(await shim.exited, 0)
    assertExit(await sb.waitExit(), sb, 137, 9)
  })

  test('reports a failing create with the runtime error', async (t) => {
    if (SKIP !== undefined) { t.skip(SKIP); return }
    const sb = new Sandbox(t, ['/nonexistent'])
    const shim = sb.spawnShim()
    const reply = await shim.reply
    assert.equal(reply.pid, undefined)
    assert.equal(typeof reply.error, 'string')
    assert.match(reply.error!, /no such file or directory/)
    assert.equal(await shim.exited, 1)
    assert.ok(!existsSync(join(sb.state, 'attach.sock')), 'attach.sock must be removed')
    assert.ok(!existsSync(join(sb.state, 'exit.json')))
  })

  test('forwards stdin from an attach client and closes it on request', async (t) => {
    if (SKIP !== undefined) { t.skip(SKIP); return }
    const sb = new Sandbox(t, ['cat'])
    const shim = await sb.createAndStart({ stdin: true })
    const client = await attach(sb.state)
    const big = Buffer.alloc(200 * 1024, 'abcdefghij')
    client.send(Buffer.concat([message(MSG_STDIN, Buffer.from('hello\n')), message(MSG_STDIN, big), message(MSG_CLOSE_STDIN)]))
    assert.deepEqual(await client.closed, { exitJsonExisted: true })
    assert.equal(await shim.exited, 0)
    assertExit(await sb.waitExit(), sb, 0)
    const out = text(sb.records(), 1)
    assert.equal(out.length, 6 + big.length)
    assert.equal(out, 'hello\n' + big.toString('utf8'))
  })

  test('sends output ticks to attach clients, then x and exit.json\'s text, and closes them after exit.json', async (t) => {
    if (SKIP !== undefined) { t.skip(SKIP); return }
    const sb = new Sandbox(t, ['sh', '-c', 'echo one; sleep 0.2; echo two'])
    const shim = sb.spawnShim()
    assert.ok((await shim.reply).pid! > 0)
    const client = await attach(sb.state) // attached before the start: sees every tick
    await sb.start()
    assert.deepEqual(await client.closed, { exitJsonExisted: true })
    const received = client.received().toString('latin1')
    const x = received.indexOf('x')
    assert.ok(x > 0, `an exit message after the ticks: ${JSON.stringify(received)}`)
    assert.equal(received.slice(x + 1), readFileSync(join(sb.state, 'exit.json'), 'latin1'))
    const ticks = received.slice(0, x)
    assert.match(ticks, /^o+$/)
    assert.equal(ticks.length, sb.records().length)
    assert.ok(ticks.length >= 2)
    assert.equal(text(sb.records()), 'one\ntwo\n')
  })

  test('splits large output into records of at most 32 KiB', async (t) => {
    if (SKIP !== undefined) { t.skip(SKIP); return }
    const script = 'i=0; while [ $i -lt 3000 ]; do echo "line-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"; i=$((i+1)); done'
    const sb = new Sandbox(t, ['sh', '-c', script])
    const shim = await sb.createAndStart()
    assert.equal(await shim.exited, 0)
    assertExit(await sb.waitExit(), sb, 0)
    const lines = text(sb.records(), 1).split('\n')
    assert.equal(lines.length, 3001)
    for (let i = 0; i < 3000; i++) assert.ok(lines[i]!.startsWith(`line-${i}-`), `line ${i}: ${lines[i]}`)
  })

  test('cuts records at newlines: a piece without newline is written at once and marked, its end marked at EOF', async (t) => {
    if (SKIP !== undefined) { t.skip(SKIP); return }
    const sb = new Sandbox(t, ['sh', '-c', 'printf abc; sleep 0.2; printf "def\\nghi\\n"; printf x >&2; sleep 0.2; printf tail'])
    const shim = await sb.createAndStart()
    assert.equal(await shim.exited, 0)
    assertExit(await sb.waitExit(), sb, 0)
    const recs = sb.records()
    assert.deepEqual(recs.filter((r) => r.stream === 1).map((r) => [r.flags, r.data.toString()]), [[1, 'abc'], [0, 'def\n'], [0, 'ghi\n'], [1, 'tail'], [2, '']])
    assert.deepEqual(recs.filter((r) => r.stream === 2).map((r) => [r.flags, r.data.toString()]), [[1, 'x'], [2, '']])
    // the records of one read share its time
    const [def, ghi] = recs.filter((r) => r.stream === 1).slice(1, 3)
    assert.equal(def!.ts, ghi!.ts)
  })

  test('tty: output arrives as stdout, resize sets the window size, ^D on close', async (t) => {
    if (SKIP !== undefined) { t.skip(SKIP); return }
    const sb = new Sandbox(t, ['sh', '-c', 'read x; stty size; echo "got:$x"; cat; echo after-eof'], true)
    const shim = await sb.createAndStart({ tty: true })
    const client = await attach(sb.state)
    client.send(Buffer.concat([resize(42, 99), message(MSG_STDIN, Buffer.from('go\n')), message(MSG_CLOSE_STDIN)]))
    assert.deepEqual(await client.closed, { exitJsonExisted: true })
    assert.equal(await shim.exited, 0)
    assertExit(await sb.waitExit(), sb, 0)
    const recs = sb.records()
    assert.ok(recs.every((r) => r.stream === 1), 'pty output is stdout')
    const out = text(recs)
    assert.match(out, /42 99\r\n/)
    assert.match(out, /got:go\r\n/)
    assert.match(out, /after-eof/)
    assert.ok(!existsSync(join(sb.state, 'console.sock')))
  })

  test('exec mode runs a process in a running container', async (t) => {
    if (SKIP !== undefined) { t.skip(SKIP); return }
    const sb = new Sandbox(t, ['sleep', '1000'])
    const main = await sb.createAndStart()

    const execState = join(sb.dir, 'exec1')
    const execLog = join(sb.dir, 'exec1.log')
    mkdirSync(execState)
    const proc = sb.processJson(['sh', '-c', 'echo from-exec; echo exec-err >&2; exit 5'])
    const ex = sb.spawnShim({ exec: proc, state: execState, log: execLog })
    const reply = await ex.reply
    assert.ok(typeof reply.pid === 'number' && reply.pid > 0, JSON.stringify(reply))
    assert.equal(await ex.exited, 0)
    assertExit(await sb.waitExit(execState), sb, 5)
    assert.equal(text(sb.records(execLog), 1), 'from-exec\n')
    assert.equal(text(sb.records(execLog), 2), 'exec-err\n')

    const ttyState = join(sb.dir, 'exec2')
    const ttyLog = join(sb.dir, 'exec2.log')
    mkdirSync(ttyState)
    const ttyProc = sb.processJson(['sh', '-c', 'read x; stty size; echo "x=$x"'], true)
    const ex2 = sb.spawnShim({ exec: ttyProc, state: ttyState, log: ttyLog, tty: true })
    assert.ok((await ex2.reply).pid! > 0)
    const client = await attach(ttyState)
    client.send(Buffer.concat([resize(7, 33), message(MSG_STDIN, Buffer.from('hi\n'))]))
    assert.deepEqual(await client.closed, { exitJsonExisted: true })
    assertExit(await sb.waitExit(ttyState), sb, 0)
    const out = text(sb.records(ttyLog))
    assert.match(out, /7 33\r\n/)
    assert.match(out, /x=hi/)

    // exec mode must not delete the container
    assert.match(sb.runc('state', sb.id), /"status": "running"/)
    sb.runc('kill', sb.id, 'KILL')
    assert.equal(await main.exited, 0)
    assertExit(await sb.waitExit(), sb, 137, 9)
  })

  test('exec mode: output drain is capped when a leftover process keeps the pipes open', async (t) => {
    if (SKIP !== undefined) { t.skip(SKIP); return }
    const sb = new Sandbox(t, ['sleep', '1000'])
    const main = await sb.createAndStart()
    const execState = join(sb.dir, 'exec')
    const execLog = join(sb.dir, 'exec.log')
    mkdirSync(execState)
    const ex = sb.spawnShim({ exec: sb.processJson(['sh', '-c', 'sleep 1000 & echo started; exit 4']), state: execState, log: execLog })
    assert.ok((await ex.reply).pid! > 0)
    assert.equal(await ex.exited, 0)
    const info = await sb.waitExit(execState)
    assertExit(info, sb, 4)
    const waitedMs = Number((BigInt(Date.now()) * 1_000_000n - BigInt(info.exitedAtNs)) / 1_000_000n)
    assert.ok(waitedMs >= 1500 && waitedMs < 10_000, `drain took ${waitedMs} ms`)
    assert.equal(text(sb.records(execLog)), 'started\n')
    sb.runc('kill', sb.id, 'KILL')
    assert.equal(await main.exited, 0)
  })

  test('exec mode reports a failing exec', async (t) => {
    if (SKIP !== undefined) { t.skip(SKIP); return }
    const sb = new Sandbox(t, ['sleep', '1000'])
    const main = await sb.createAndStart()
    const execState = join(sb.dir, 'exec')
    mkdirSync(execState)
    const ex = sb.spawnShim({ exec: sb.processJson(['/no/such/binary']), state: execState, log: join(sb.dir, 'exec.log') })
    const reply = await ex.reply
    assert.match(reply.error ?? '', /no such file or directory/)
    assert.equal(await ex.exited, 1)
    sb.runc('kill', sb.id, 'KILL')
    assert.equal(await main.exited, 0)
  })

  test('records the exit code with nobody attached after the spawner lets go', async (t) => {
    if (SKIP !== undefined) { t.skip(SKIP); return }
    const sb = new Sandbox(t, ['sh', '-c', 'echo bye; sleep 0.3; exit 7'])
    const shim = sb.spawnShim()
    assert.ok((await shim.reply).pid! > 0)
    shim.child.removeAllListeners('exit')
    shim.child.unref()
    await sb.start()
    assertExit(await sb.waitExit(), sb, 7)
    assert.equal(text(sb.records()), 'bye\n')
    await waitFor(() => !existsSync(join(sb.state, 'attach.sock')), 'attach.sock removal')
  })
})
