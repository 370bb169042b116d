// dockerd's wordings with the real docker CLI: docker update's refusals (the body's checks, the runtime's refusal of a
// live cgroup write, a memory limit below the current usage), update of a stopped and of a removed container, and the
// create-time refusals of resource limits, --isolation and --sysctl. Each message was taken from a real dockerd.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar, request } from '../helpers/engine.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')
const V1_MEMORY = '/sys/fs/cgroup/memory/memory.limit_in_bytes'
const BLKIO_WEIGHT = ['/sys/fs/cgroup/blkio/blkio.weight', '/sys/fs/cgroup/blkio/blkio.bfq.weight', '/sys/fs/cgroup/io.weight', '/sys/fs/cgroup/io.bfq.weight'].some((p) => existsSync(p))

test('dockerd\'s wordings: update, resource limits, isolation, sysctls', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  assert.equal((await docker('import', busyboxTar(), 'busybox:latest')).status, 0)
  const refusedBy = async (args: string[], message: RegExp): Promise<void> => {
    const r = await docker(...args)
    assert.notEqual(r.status, 0, `${args.join(' ')} was accepted`)
    assert.match(r.stderr, message, args.join(' '))
  }

  await t.test('docker update: the body\'s checks, the runtime\'s refusals, a stopped and a removed container', { skip: existsSync(V1_MEMORY) ? false : 'cgroup v1 memory controller not mounted' }, async () => {
    const id = (await docker('run', '-d', '-m', '64m', 'busybox', 'sleep', '60')).stdout.trim()
    const cpus = /Range of CPUs is from 0\.01 to (\d+)\.00, as there are only \1 CPUs available/
    for (const [args, message] of [
      [['-m', '100k'], /Minimum memory limit allowed is 6MB/],
      [['-m', '64m', '--memory-swap', '32m'], /Minimum memoryswap limit should be larger than memory limit, see usage/],
      [['--memory-reservation', '1k'], /Minimum memory reservation allowed is 6MB/],
      [['--cpus', '5000'], cpus],
      [['--cpu-period', '100'], /CPU cfs period can not be less than 1ms \(i\.e\. 1000\) or larger than 1s \(i\.e\. 1000000\)/],
      [['--cpu-quota', '100'], /CPU cfs quota can not be less than 1ms \(i\.e\. 1000\)/],
      [['--cpuset-cpus', '4000'], /Requested CPUs are not available - requested 4000, available: /],
      [['--restart', 'bogus'], /invalid restart policy 'bogus'/],
      // the runtime refuses the cgroup write: dockerd reports the runtime's own message
      [['--cpu-shares', '1'], new RegExp(`Cannot update container ${id}: \\w+ did not terminate successfully: exit status 1: the minimum allowed cpu-shares is 2\\n: unknown`)],
      [['--cpus', '0.001'], new RegExp(`Cannot update container ${id}: \\w+ did not terminate successfully: exit status 1: failed to write "100": write /sys/fs/cgroup/cpu/.*/cpu\\.cfs_quota_us: invalid argument\\n: unknown`)]
    ] as const) {
      await refusedBy(['update', ...args, id], message)
    }
    // nothing of the refused updates was recorded
    const hc = (JSON.parse((await docker('inspect', id)).stdout) as Array<{ HostConfig: Record<string, number> }>)[0]?.HostConfig
    assert.deepEqual([hc?.Memory, hc?.NanoCpus, hc?.CpuShares, hc?.CpuPeriod, hc?.CpuQuota], [64 * 1024 * 1024, 0, 0, 0, 0])
    // a memory limit below what the container uses (tmpfs pages count against it)
    assert.equal((await docker('exec', id, 'sh', '-c', 'head -c 20000000 /dev/zero > /dev/shm/fill')).status, 0)
    await refusedBy(['update', '-m', '10m', '--memory-swap', '20m', id], /Cannot update container [0-9a-f]{64}: \w+ did not terminate successfully: exit status 1: unable to set memory limit to 10485760 \(current usage: \d+, peak usage: \d+\)\n: unknown/)
    // the body's wire types and its rules without a CLI flag: dockerd's wordings; a field Berth does not update is named
    for (const [body, status, message] of [
      [{ Memory: '1g' }, 400, 'json: cannot unmarshal string into Go struct field UpdateConfig.Memory of type int64'],
      [{ PidsLimit: 1.5 }, 400, 'json: cannot unmarshal number into Go struct field UpdateConfig.PidsLimit of type int64'],
      [{ CpusetCpus: 1 }, 400, 'json: cannot unmarshal number into Go struct field HostConfig.CpusetCpus of type string'],
      [{ Memory: 256 * 1024 * 1024 }, 409, 'Memory limit should be smaller than already set memoryswap limit, update the memoryswap at the same time'],
      [{ RestartPolicy: { Name: 'always', MaximumRetryCount: 3 } }, 400, "invalid restart policy: maximum retry count can only be used with 'on-failure'"]
    ] as const) {
      const r = await request(socket, 'POST', `/containers/${id}/update`, { body })
      assert.deepEqual([r.status, (r.json() as { message: string }).message], [status, message], JSON.stringify(body))
    }
    const ignored = await request(socket, 'POST', `/containers/${id}/update`, { body: { CpuRealtimePeriod: 1000, OomKillDisable: false } })
    assert.equal(ignored.status, 200, ignored.text)
    assert.deepEqual((ignored.json() as { Warnings: string[] }).Warnings, ['Berth does not update CpuRealtimePeriod; these settings are unchanged'])
    // kernel memory: dockerd's deprecation warning; block I/O weight: dockerd's warning where the kernel lacks it
    const km = await request(socket, 'POST', `/containers/${id}/update`, { body: { KernelMemory: 10485760 } })
    assert.equal(km.status, 200, km.text)
    assert.match((km.json() as { Warnings: string[] }).Warnings.join('\n'), /^Specifying a kernel memory limit is deprecated and will be removed in a future release\./)
    if (!BLKIO_WEIGHT) {
      const bw = await docker('update', '--blkio-weight', '300', id)
      assert.equal(bw.status, 0, bw.stderr)
      // (docker update prints the Warnings on its standard output)
      assert.match(bw.stdout, /^Your kernel does not support Block I\/O weight or the cgroup is not mounted\. Weight discarded\.$/m)
    }
    // stopped: recorded; removed: no such container
    assert.equal((await docker('stop', '-t', '0', id)).status, 0)
    assert.equal((await docker('update', '-m', '32m', '--memory-swap', '64m', id)).status, 0)
    assert.equal((JSON.parse((await docker('inspect', id)).stdout) as Array<{ HostConfig: Record<string, number> }>)[0]?.HostConfig.Memory, 32 * 1024 * 1024)
    assert.equal((await docker('rm', id)).status, 0)
    await refusedBy(['update', '-m', '32m', id], new RegExp(`No such container: ${id}`))
  })

  await t.test('create: resource limits, --isolation, --sysctl', async () => {
    for (const [args, message] of [
      [['--cpus', '5000'], /Range of CPUs is from 0\.01 to (\d+)\.00, as there are only \1 CPUs available/],
      [['--cpu-period', '100'], /CPU cfs period can not be less than 1ms \(i\.e\. 1000\) or larger than 1s \(i\.e\. 1000000\)/],
      [['--cpu-quota', '100'], /CPU cfs quota can not be less than 1ms \(i\.e\. 1000\)/],
      [['--memory-reservation', '1k'], /Minimum memory reservation allowed is 6MB/],
      [['-m', '64m', '--memory-reservation', '100m'], /Minimum memory limit can not be less than memory reservation limit, see usage/],
      [['--memory-swap', '10m', '-m', '20m'], /Minimum memoryswap limit should be larger than memory limit, see usage/],
      [['--isolation', 'hyperv'], /Invalid isolation: "hyperv" - linux only supports 'default'/],
      [['--isolation', 'process'], /Invalid isolation: "process" - linux only supports 'default'/],
      [['--network', 'host', '--sysctl', 'net.ipv4.ip_forward=1'], /sysctl "net\.ipv4\.ip_forward" not allowed in host network namespace/],
      [['--ipc', 'host', '--sysctl', 'fs.mqueue.msg_max=5'], /sysctl "fs\.mqueue\.msg_max" is not allowed in the hosts ipc namespace/]
    ] as const) {
      await refusedBy(['create', ...args, 'busybox', 'true'], message)
    }
    const both = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['true'], HostConfig: { NanoCpus: 1e9, CpuQuota: 50000 } } })
    assert.match(both.text, /Conflicting options: Nano CPUs and CPU Quota cannot both be set/)
    const uts = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['true'], HostConfig: { UTSMode: 'host', Sysctls: { 'kernel.domainname': 'x' } } } })
    assert.equal(uts.status, 400)
    assert.match(uts.text, /sysctl \\"kernel\.domainname\\" is not in a separate kernel namespace/)
    assert.equal((await docker('create', '--isolation', 'default', 'busybox', 'true')).status, 0)
    // Warnings are printed by the CLI after its own "WARNING: " prefix
    const w = await docker('create', '--cpu-rt-runtime', '10', 'busybox', 'true')
    assert.equal(w.status, 0, w.stderr)
    assert.match(w.stderr, /^WARNING: Berth does not apply CpuRealtimeRuntime/m)
    if (!BLKIO_WEIGHT) {
      const bw = await docker('create', '--blkio-weight', '5', 'busybox', 'true')
      assert.equal(bw.status, 0, bw.stderr)
      assert.match(bw.stderr, /^WARNING: Your kernel does not support Block I\/O weight or the cgroup is not mounted\. Weight discarded\.$/m)
    }
  })
})
