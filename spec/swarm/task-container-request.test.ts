// The container a task asks the engine for is a typed create request (lib/swarm/task-container-spec.ts, started from
// newCreateRequest): it must be exactly what the engine made of the PascalCase create body the swarm used to send
// (decodeCreateRequest over that body, written out below as dockerd's executor sends it), field for field, so that
// task containers are created, inspected and published as before.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { decodeCreateRequest } from '../../lib/containers/create-request.js'
import type { ServiceRecord, TaskRecord } from '../../lib/swarm/model.js'
import { decodeServiceSpec } from '../../lib/swarm/spec-wire.js'
import { taskContainerRequest, taskName } from '../../lib/swarm/task-container-spec.js'

function service (spec: Record<string, unknown>): ServiceRecord {
  return { id: 'svc0000000000000000000001', spec: decodeServiceSpec(spec) } as unknown as ServiceRecord
}

function task (svc: ServiceRecord, slot: number): TaskRecord {
  return { id: 'task000000000000000000001', slot, nodeId: 'node00000000000000000001', serviceId: svc.id, spec: svc.spec.taskTemplate } as unknown as TaskRecord
}

const LABELS = (svc: ServiceRecord, t: TaskRecord): Record<string, string> => ({
  'com.docker.swarm.node.id': 'node00000000000000000001',
  'com.docker.swarm.service.id': svc.id,
  'com.docker.swarm.service.name': svc.spec.name,
  'com.docker.swarm.task': '',
  'com.docker.swarm.task.id': t.id,
  'com.docker.swarm.task.name': taskName(svc.spec.name, t)
})

test('a service with every field the swarm hands on: the typed request is the decoded body', () => {
  const svc = service({
    Name: 'web',
    TaskTemplate: {
      ContainerSpec: {
        Image: 'busybox:latest',
        Labels: { tier: 'front' },
        Command: ['sh', '-c'],
        Args: ['sleep 600'],
        Hostname: 'web-host',
        Env: ['A=1', 'B=2'],
        Dir: '/srv',
        User: 'nobody',
        Groups: ['wheel'],
        Mounts: [
          { Type: 'volume', Source: 'data', Target: '/data' },
          { Type: 'volume', Target: '/cache/x' },
          { Type: 'bind', Source: '/etc/hostname', Target: '/h', ReadOnly: true },
          { Type: 'tmpfs', Target: '/scratch', TmpfsOptions: { SizeBytes: 1048576, Mode: 0o1777 } },
          { Type: 'tmpfs', Target: '/ro', ReadOnly: true }
        ],
        StopSignal: 'SIGINT',
        StopGracePeriod: 2_500_000_000,
        Healthcheck: { Test: ['CMD', 'true'], Interval: 1_000_000_000, Retries: 2 },
        Init: true,
        TTY: true,
        OpenStdin: true,
        ReadOnly: true,
        Hosts: ['10.0.0.1 db dbalias', 'cache:10.0.0.2'],
        DNSConfig: { Nameservers: ['10.0.0.53'], Search: ['example.org'], Options: ['ndots:2'] },
        CapabilityAdd: ['CAP_NET_ADMIN'],
        CapabilityDrop: ['CAP_MKNOD']
      },
      Resources: { Limits: { NanoCPUs: 500000000, MemoryBytes: 67108864, Pids: 50 } }
    },
    EndpointSpec: {
      Ports: [
        { Protocol: 'tcp', TargetPort: 80, PublishedPort: 8080, PublishMode: 'host' },
        { Protocol: 'udp', TargetPort: 53, PublishedPort: 0, PublishMode: 'host' },
        { Protocol: 'tcp', TargetPort: 443, PublishedPort: 8443, PublishMode: 'ingress' }
      ]
    }
  })
  const t = task(svc, 2)
  const files = [{ source: '/run/berth/swarm-files/t/secret-0', target: '/run/secrets/pw' }]
  const networks = [{ name: 'front', aliases: ['www'] }, { name: 'back', aliases: [] }]
  const got = taskContainerRequest({ service: svc, task: t, nodeId: 'node00000000000000000001', files, networks })
  const body = {
    Image: 'busybox:latest',
    Entrypoint: ['sh', '-c'],
    Cmd: ['sleep 600'],
    Env: ['A=1', 'B=2'],
    User: 'nobody',
    WorkingDir: '/srv',
    Hostname: 'web-host',
    Labels: { tier: 'front', ...LABELS(svc, t) },
    Tty: true,
    OpenStdin: true,
    StopSignal: 'SIGINT',
    StopTimeout: 3,
    Healthcheck: { Test: ['CMD', 'true'], Interval: 1_000_000_000, Retries: 2 },
    ExposedPorts: { '80/tcp': {}, '53/udp': {}, '443/tcp': {} },
    HostConfig: {
      Binds: ['data:/data', `${t.id}-cachex:/cache/x`, '/etc/hostname:/h:ro', '/run/berth/swarm-files/t/secret-0:/run/secrets/pw:ro'],
      Mounts: [
        { Type: 'tmpfs', Target: '/scratch', TmpfsOptions: { SizeBytes: 1048576, Mode: 0o1777 } },
        { Type: 'tmpfs', Target: '/ro', ReadOnly: true }
      ],
      RestartPolicy: { Name: 'no' },
      NetworkMode: 'front',
      PortBindings: { '80/tcp': [{ HostIp: '', HostPort: '8080' }], '53/udp': [{ HostIp: '', HostPort: '' }] },
      Memory: 67108864,
      NanoCpus: 500000000,
      PidsLimit: 50,
      ReadonlyRootfs: true,
      ExtraHosts: ['db:10.0.0.1', 'dbalias:10.0.0.1', 'cache:10.0.0.2'],
      Dns: ['10.0.0.53'],
      DnsSearch: ['example.org'],
      DnsOptions: ['ndots:2'],
      CapAdd: ['CAP_NET_ADMIN'],
      CapDrop: ['CAP_MKNOD'],
      GroupAdd: ['wheel'],
      Init: true
    },
    NetworkingConfig: {
      EndpointsConfig: {
        front: { Aliases: ['web', 'www', 'tasks.web', 'tasks.www'] },
        back: { Aliases: ['web', 'tasks.web'] }
      }
    }
  }
  const want = decodeCreateRequest(body)
  // the body path doubled the memory as swap while decoding; a typed request gets it at create (planCreate)
  want.settings.resources.memorySwap = 0
  assert.deepStrictEqual(got, want)
})

test('a bare service: the image\'s command, the default bridge, nothing mounted or published', () => {
  const svc = service({ Name: 'bare', TaskTemplate: { ContainerSpec: { Image: 'busybox' } } })
  const t = task(svc, 1)
  const got = taskContainerRequest({ service: svc, task: t, nodeId: 'node00000000000000000001', files: [], networks: [] })
  const want = decodeCreateRequest({
    Image: 'busybox',
    Env: [],
    User: '',
    WorkingDir: '',
    Hostname: '',
    Labels: LABELS(svc, t),
    Tty: false,
    OpenStdin: false,
    HostConfig: { Binds: [], RestartPolicy: { Name: 'no' }, NetworkMode: 'default', PortBindings: {}, ReadonlyRootfs: false, ExtraHosts: [], Dns: [], DnsSearch: [], DnsOptions: [], CapAdd: [], CapDrop: [], GroupAdd: [] },
    NetworkingConfig: { EndpointsConfig: {} }
  })
  assert.deepStrictEqual(got, want)
  assert.equal(got.config.entrypoint, null)
  assert.equal(got.config.cmd, null)
  assert.equal(got.settings.networkMode, 'bridge')
})

test('a host-mode port the engine cannot publish is refused as a body\'s was (the task is rejected with it)', () => {
  const svc = service({ Name: 'p', TaskTemplate: { ContainerSpec: { Image: 'busybox' } }, EndpointSpec: { Ports: [{ Protocol: 'tcp', TargetPort: 70000, PublishedPort: 8080, PublishMode: 'host' }] } })
  assert.throws(() => taskContainerRequest({ service: svc, task: task(svc, 1), nodeId: 'n', files: [], networks: [] }), { message: 'invalid port specification: "70000"' })
})
