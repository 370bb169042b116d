// Runtimes per container, as dockerd's: daemon.json's "runtimes" (a binary and its runtimeArgs) are named by
// `docker run --runtime`; the container's create, exec, pause, update, kill and the monitor's delete go through that
// binary, also after a daemon restart (the adoption uses the recorded runtime) and after a reload removed it (a running
// container keeps its binary; its next start is refused with dockerd's words); a runtime whose binary is missing fails
// the start with the exec's error. The second runtime is real: a script that records its arguments and execs runc.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { cleanupDaemon, containerSkipReason, createContainer, daemonNetworkArgs, dockerCli, hasDockerCli, importBusybox, request, tmpDir, uniqueNetworkOptions } from '../helpers/engine.js'
import { until } from '../helpers/poll.js'
import { berth, pingable, startDaemon, type Proc } from './helpers.js'

const skip = containerSkipReason()

interface Inspect { HostConfig: { Runtime: string }, State: { Status: string, ExitCode: number, Error: string } }

describe('runtimes per container', { skip: skip ?? false }, () => {
  it('docker run --runtime NAME runs the container, its execs, pauses, updates and stops through that runtime', async (t) => {
    const dir = tmpDir()
    const net = uniqueNetworkOptions()
    const sock = join(dir, 'b.sock')
    const conf = join(dir, 'daemon.json')
    const calls = join(dir, 'traced.log')
    const runc = execFileSync('sh', ['-c', 'PATH="$PATH:/usr/sbin:/sbin" command -v runc'], { encoding: 'utf8' }).trim()
    const traced = join(dir, 'traced')
    writeFileSync(traced, `#!/bin/sh\nprintf '%s\\n' "$*" >> '${calls}'\nexec '${runc}' "$@"\n`, { mode: 0o755 })
    writeFileSync(conf, JSON.stringify({ runtimes: { traced: { path: traced, runtimeArgs: ['--debug'] } } }))
    const args = ['-H', `unix://${sock}`, '--data-root', join(dir, 'data'), '--exec-root', join(dir, 'run'), '--config-file', conf, ...daemonNetworkArgs(net)]
    let d: Proc = startDaemon(args)
    t.after(async () => { await cleanupDaemon(d.child, dir, net) })
    await pingable(sock, d)
    await importBusybox(sock)
    const lines = (): string[] => existsSync(calls) ? readFileSync(calls, 'utf8').split('\n').filter((l) => l !== '') : []
    /** The runtime's command lines for one container (every one with the runtimeArgs first). */
    const callsFor = (id: string): string[] => lines().filter((l) => l.endsWith(` ${id}`) || l.includes(` ${id} `))
    const called = async (id: string, re: RegExp): Promise<string> => await until(`traced ${String(re)} for ${id.slice(0, 12)}`, async () => callsFor(id).find((l) => re.test(l)), 20_000)

    // docker info lists every runtime with its path and arguments; the default stays runc
    type Runtimes = Record<string, { path: string, runtimeArgs?: string[], status?: Record<string, string> }>
    const info = (await request(sock, 'GET', '/info')).json() as { Runtimes: Runtimes, DefaultRuntime: string }
    // with its OCI features document as dockerd 25's status (API 1.44 on): what `<runtime> <runtimeArgs> features`
    // prints, asked once
    const FEATURES = 'org.opencontainers.runtime-spec.features'
    const runcFeatures = JSON.stringify(JSON.parse(execFileSync(runc, ['features'], { encoding: 'utf8' })))
    assert.deepEqual(info.Runtimes.traced, { path: traced, runtimeArgs: ['--debug'], status: { [FEATURES]: runcFeatures } })
    assert.deepEqual(info.Runtimes.runc?.status, { [FEATURES]: runcFeatures }, JSON.stringify(info.Runtimes))
    assert.deepEqual(info.Runtimes['io.containerd.runc.v2']?.status, { [FEATURES]: runcFeatures })
    assert.equal(info.DefaultRuntime, 'runc')
    const older = (await request(sock, 'GET', '/v1.43/info')).json() as { Runtimes: Runtimes }
    assert.deepEqual(older.Runtimes.traced, { path: traced, runtimeArgs: ['--debug'] })
    assert.equal(older.Runtimes.runc?.status, undefined)
    assert.deepEqual(lines().filter((l) => l.endsWith('features')), ['--debug features'])
    if (hasDockerCli()) {
      const r = await dockerCli(sock, ['info', '--format', '{{json .Runtimes}}'])
      assert.equal(r.status, 0, r.stderr)
      assert.equal((JSON.parse(r.stdout) as Runtimes).traced?.status?.[FEATURES], runcFeatures)
    }

    // an unknown name: dockerd's 400
    const bad = await request(sock, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['true'], HostConfig: { Runtime: 'nosuch' } } })
    assert.equal(bad.status, 400, bad.text)
    assert.equal((bad.json() as { message: string }).message, 'unknown or invalid runtime name: nosuch')

    let id: string
    if (hasDockerCli()) {
      const r = await dockerCli(sock, ['run', '-d', '--runtime', 'traced', '--name', 'traced1', 'busybox', 'sleep', '300'])
      assert.equal(r.status, 0, r.stderr)
      id = r.stdout.trim()
    } else {
      id = await createContainer(sock, { Image: 'busybox', Cmd: ['sleep', '300'], HostConfig: { Runtime: 'traced' } }, 'traced1')
      assert.equal((await request(sock, 'POST', `/containers/${id}/start`)).status, 204)
    }
    // created by the monitor through the runtime, with its runtimeArgs before its own options
    assert.match(await called(id, / run --detach /), /^--debug --root \S+ --log \S+ --log-format json run --detach --bundle /)
    assert.equal(((await request(sock, 'GET', `/containers/${id}/json`)).json() as Inspect).HostConfig.Runtime, 'traced')
    // a container that names none gets the default, and never reaches the traced runtime
    const plain = await createContainer(sock, { Image: 'busybox', Cmd: ['true'] })
    assert.equal(((await request(sock, 'GET', `/containers/${plain}/json`)).json() as Inspect).HostConfig.Runtime, 'runc')
    assert.equal((await request(sock, 'POST', `/containers/${plain}/start`)).status, 204)
    assert.equal(((await request(sock, 'POST', `/containers/${plain}/wait`)).json() as { StatusCode: number }).StatusCode, 0)
    assert.deepEqual(callsFor(plain), [])

    const exec = async (): Promise<void> => {
      const e = await request(sock, 'POST', `/containers/${id}/exec`, { body: { Cmd: ['echo', 'hi'], AttachStdout: true } })
      assert.equal(e.status, 201, e.text)
      const run = await request(sock, 'POST', `/exec/${(e.json() as { Id: string }).Id}/start`, { body: { Detach: false } })
      assert.match(run.body.toString(), /hi/)
    }
    await exec()
    await called(id, /^--debug --root \S+ --log \S+ --log-format json exec --detach --process /)
    assert.equal((await request(sock, 'POST', `/containers/${id}/pause`)).status, 204)
    assert.equal((await request(sock, 'POST', `/containers/${id}/unpause`)).status, 204)
    await called(id, /^--debug --root \S+ pause /)
    await called(id, /^--debug --root \S+ resume /)
    assert.equal((await request(sock, 'POST', `/containers/${id}/update`, { body: { CpuShares: 512 } })).status, 200)
    await called(id, /^--debug --root \S+ update /)

    // a restarted daemon adopts it with the runtime it was started with
    d.child.kill('SIGTERM')
    assert.equal(await d.exited(), 0)
    d = startDaemon(args)
    await pingable(sock, d)
    const before = callsFor(id).length
    await exec()
    await until('the exec after the restart through traced', async () => callsFor(id).length > before && callsFor(id).slice(before).some((l) => / exec --detach /.test(l)), 20_000)

    // the runtime removed by a reload: the running container keeps it (stop and the monitor's delete go through it)
    writeFileSync(conf, '{}')
    d.child.kill('SIGHUP')
    await d.waitFor(new RegExp(`reloaded configuration from .*daemon\\.json: runtimes: \\[traced:${traced.replace(/[/.]/g, '\\$&')} --debug\\] → \\[\\]`))
    assert.equal(((await request(sock, 'GET', '/info')).json() as { Runtimes: Record<string, unknown> }).Runtimes.traced, undefined)
    const stop = hasDockerCli() ? await dockerCli(sock, ['stop', '-t', '1', 'traced1']) : { status: (await request(sock, 'POST', `/containers/${id}/stop?t=1`)).status === 204 ? 0 : 1, stderr: '' }
    assert.equal(stop.status, 0, stop.stderr)
    await called(id, /^--debug --root \S+ kill /)
    await called(id, /^--debug --root \S+ delete --force /)
    // its next start: dockerd's words, and the container stays stopped with the error and exit code 128
    const again = await request(sock, 'POST', `/containers/${id}/start`)
    assert.equal(again.status, 400, again.text)
    assert.equal((again.json() as { message: string }).message, 'unknown or invalid runtime name: traced')
    const state = ((await request(sock, 'GET', `/containers/${id}/json`)).json() as Inspect).State
    assert.equal(state.Status, 'exited')
    assert.equal(state.ExitCode, 128)
    assert.equal(state.Error, 'unknown or invalid runtime name: traced')
    assert.equal((await request(sock, 'POST', '/containers/create', { body: { Image: 'busybox', HostConfig: { Runtime: 'traced' } } })).status, 400)
    const rm = hasDockerCli() ? await dockerCli(sock, ['rm', 'traced1']) : { status: (await request(sock, 'DELETE', `/containers/${id}`)).status === 204 ? 0 : 1, stderr: '' }
    assert.equal(rm.status, 0, rm.stderr)
    assert.equal((await request(sock, 'DELETE', `/containers/${plain}`)).status, 204)

    // configured again: a new container runs through it, and `docker rm -f` kills it there
    writeFileSync(conf, JSON.stringify({ runtimes: { traced: { path: traced }, gone: { path: join(dir, 'gone') }, unnamed: { path: 'berth-no-such-runtime' } } }))
    d.child.kill('SIGHUP')
    await d.waitFor(/runtimes: \[\] → \[traced:/)
    // a runtime without its binary has no features; one whose options changed is asked again
    const reloaded = (await request(sock, 'GET', '/info')).json() as { Runtimes: Runtimes }
    assert.deepEqual(reloaded.Runtimes.gone, { path: join(dir, 'gone') })
    assert.deepEqual(reloaded.Runtimes.unnamed, { path: 'berth-no-such-runtime' })
    assert.deepEqual(reloaded.Runtimes.traced, { path: traced, status: { [FEATURES]: runcFeatures } })
    assert.deepEqual(lines().filter((l) => l.endsWith('features')), ['--debug features', 'features'])
    // a runtime whose binary is not there: its start fails with the exec's own error, in Go's words as dockerd's
    for (const [name, text] of [['gone', `fork/exec ${join(dir, 'gone')}: no such file or directory`], ['unnamed', 'exec: "berth-no-such-runtime": executable file not found in $PATH']]) {
      const c = await createContainer(sock, { Image: 'busybox', Cmd: ['true'], HostConfig: { Runtime: name } })
      const r = await request(sock, 'POST', `/containers/${c}/start`)
      assert.equal(r.status, 400, r.text)
      assert.equal((r.json() as { message: string }).message, `failed to create task: OCI runtime create failed: ${text}`)
      assert.equal((await request(sock, 'DELETE', `/containers/${c}`)).status, 204)
    }
    const id2 = await createContainer(sock, { Image: 'busybox', Cmd: ['sleep', '300'], HostConfig: { Runtime: 'traced' } })
    assert.equal((await request(sock, 'POST', `/containers/${id2}/start`)).status, 204)
    await called(id2, /^--root \S+ --log \S+ --log-format json run --detach /)
    assert.equal((await request(sock, 'DELETE', `/containers/${id2}?force=1`)).status, 204)
    await called(id2, /^--root \S+ kill --all /)
    d.child.kill('SIGTERM')
    assert.equal(await d.exited(), 0)
  })

  it('the configuration is checked as dockerd checks it', (t) => {
    const dir = tmpDir()
    t.after(() => { execFileSync('rm', ['-rf', dir]) })
    const conf = join(dir, 'daemon.json')
    const cases: Array<[unknown, string[], RegExp]> = [
      [{ runtimes: { runc: { path: '/usr/bin/crun' } } }, [], /runtime name 'runc' is reserved/],
      [{}, ['--add-runtime', 'runc=/usr/bin/crun'], /runtime name 'runc' is reserved/],
      [{}, ['--add-runtime', 'crun'], /invalid runtime argument: crun/],
      [{}, ['--add-runtime', 'crun=/a', '--add-runtime', 'CRUN=/b'], /runtime 'crun' was already defined/],
      [{ 'default-runtime': 'crun' }, [], /specified default runtime 'crun' does not exist/],
      [{ runtimes: { kata: { runtimeType: 'io.containerd.kata.v2' } } }, [], /runtime kata: runtimeType \(a containerd shim\) is not supported by Berth/],
      [{ runtimes: { crun: { path: '/usr/bin/crun', options: { a: 1 } } } }, [], /runtime crun: options not supported by Berth/],
      [{ runtimes: { crun: {} } }, [], /runtime crun: either a runtimeType or a path must be configured/],
      [{ runtimes: { crun: { path: '/usr/bin/crun', runtimeArgs: Array.from({ length: 9 }, (_, i) => `--a${i}`) } } }, [], /at most 8 runtimeArgs/]
    ]
    for (const [doc, flags, text] of cases) {
      writeFileSync(conf, JSON.stringify(doc))
      const r = berth(['daemon', '--validate', '--config-file', conf, ...flags])
      assert.notEqual(r.status, 0, JSON.stringify([doc, flags]))
      assert.match(r.stderr, text)
    }
    writeFileSync(conf, JSON.stringify({ 'default-runtime': 'crun', runtimes: { crun: { path: '/usr/bin/crun', runtimeArgs: ['--systemd-cgroup'] } } }))
    assert.equal(berth(['daemon', '--validate', '--config-file', conf]).status, 0)
  })
})
