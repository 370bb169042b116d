// The environment of a legacy link, as dockerd's daemon/links writes it.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { linkEnv } from '../../lib/network/link-env.js'

test('link env: name, one port, the linked container\'s environment without HOME and PATH', () => {
  assert.deepEqual(linkEnv({ name: '/web/db-1', ip: '172.0.17.2', env: ['PASSWORD=gordon', 'PATH=/bin', 'HOME=/root', 'BARE'], exposed: ['6379/tcp'] }), [
    'DB_1_PORT=tcp://172.0.17.2:6379',
    'DB_1_PORT_6379_TCP=tcp://172.0.17.2:6379',
    'DB_1_PORT_6379_TCP_ADDR=172.0.17.2',
    'DB_1_PORT_6379_TCP_PORT=6379',
    'DB_1_PORT_6379_TCP_PROTO=tcp',
    'DB_1_NAME=/web/db-1',
    'DB_1_ENV_PASSWORD=gordon'
  ])
})

test('link env: TCP ports first, consecutive ports of a protocol also as a range', () => {
  const env = linkEnv({ name: '/db/docker', ip: '172.0.17.2', env: ['PASSWORD=gordon'], exposed: ['6300/udp', '6381/tcp', '6379/tcp', '6382/udp', '6380/tcp'] })
  assert.equal(env[0], 'DOCKER_PORT=tcp://172.0.17.2:6379')
  assert.deepEqual([...env].sort(), [
    'DOCKER_ENV_PASSWORD=gordon', 'DOCKER_NAME=/db/docker', 'DOCKER_PORT=tcp://172.0.17.2:6379',
    'DOCKER_PORT_6300_UDP=udp://172.0.17.2:6300', 'DOCKER_PORT_6300_UDP_ADDR=172.0.17.2', 'DOCKER_PORT_6300_UDP_PORT=6300', 'DOCKER_PORT_6300_UDP_PROTO=udp',
    'DOCKER_PORT_6379_TCP=tcp://172.0.17.2:6379', 'DOCKER_PORT_6379_TCP_ADDR=172.0.17.2', 'DOCKER_PORT_6379_TCP_END=tcp://172.0.17.2:6381',
    'DOCKER_PORT_6379_TCP_PORT=6379', 'DOCKER_PORT_6379_TCP_PORT_END=6381', 'DOCKER_PORT_6379_TCP_PORT_START=6379', 'DOCKER_PORT_6379_TCP_PROTO=tcp',
    'DOCKER_PORT_6379_TCP_START=tcp://172.0.17.2:6379',
    'DOCKER_PORT_6380_TCP=tcp://172.0.17.2:6380', 'DOCKER_PORT_6380_TCP_ADDR=172.0.17.2', 'DOCKER_PORT_6380_TCP_PORT=6380', 'DOCKER_PORT_6380_TCP_PROTO=tcp',
    'DOCKER_PORT_6381_TCP=tcp://172.0.17.2:6381', 'DOCKER_PORT_6381_TCP_ADDR=172.0.17.2', 'DOCKER_PORT_6381_TCP_PORT=6381', 'DOCKER_PORT_6381_TCP_PROTO=tcp',
    'DOCKER_PORT_6382_UDP=udp://172.0.17.2:6382', 'DOCKER_PORT_6382_UDP_ADDR=172.0.17.2', 'DOCKER_PORT_6382_UDP_PORT=6382', 'DOCKER_PORT_6382_UDP_PROTO=udp'
  ])
})

test('link env: a range ending at the last port, no ports at all', () => {
  const env = linkEnv({ name: '/a/b', ip: '10.0.0.2', env: [], exposed: ['81/tcp', '80/tcp'] })
  assert.ok(env.includes('B_PORT_80_TCP_PORT_END=81'))
  assert.deepEqual(linkEnv({ name: '/a/b', ip: '10.0.0.2', env: [], exposed: [] }), ['B_NAME=/a/b'])
})
