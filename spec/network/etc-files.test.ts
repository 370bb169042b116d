// /etc/hosts and /etc/resolv.conf texts.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { hostsFile, resolvConf } from '../../lib/network/etc-files.js'

test('hosts: own address, links, extra hosts', () => {
  const h = hostsFile({ hostname: 'abc', domainname: '', ip: '10.0.0.5', extraHosts: ['db:10.0.0.9'], links: [{ ip: '10.0.0.7', names: ['web', '0123456789ab', 'webc'] }] })
  assert.match(h, /^127\.0\.0\.1\tlocalhost\n/)
  assert.match(h, /\n10\.0\.0\.7\tweb 0123456789ab webc\n/)
  assert.match(h, /\n10\.0\.0\.9\tdb\n/)
  assert.match(h, /\n10\.0\.0\.5\tabc\n$/)
  // dockerd's order: --add-host entries before links
  assert.ok(h.indexOf('10.0.0.9\tdb') < h.indexOf('10.0.0.7\tweb'))
  assert.match(hostsFile({ hostname: 'x', domainname: 'y.z', ip: null, extraHosts: [], links: [] }), /127\.0\.1\.1\tx\.y\.z x\n$/)
})

test('resolv.conf: embedded server, --dns, search and options, loopback servers dropped', () => {
  const host = 'nameserver 127.0.0.53\nnameserver 192.0.2.53\nsearch corp.example\noptions edns0\n'
  assert.equal(resolvConf({ host, dns: [], dnsSearch: [], dnsOptions: [], embedded: null }), 'nameserver 192.0.2.53\nsearch corp.example\noptions edns0\n')
  assert.equal(resolvConf({ host, dns: ['9.9.9.9'], dnsSearch: ['a.b'], dnsOptions: ['ndots:2'], embedded: null }), 'nameserver 9.9.9.9\nsearch a.b\noptions ndots:2\n')
  assert.equal(resolvConf({ host, dns: [], dnsSearch: [], dnsOptions: [], embedded: '10.1.0.1' }), 'nameserver 10.1.0.1\nsearch corp.example\noptions edns0 ndots:0\n')
  // only loopback servers: dockerd's fallback servers, except in the host's namespace
  const local = 'nameserver 127.0.0.53\n'
  assert.equal(resolvConf({ host: local, dns: [], dnsSearch: [], dnsOptions: [], embedded: null }), 'nameserver 8.8.8.8\nnameserver 8.8.4.4\n')
  assert.equal(resolvConf({ host: local, dns: [], dnsSearch: [], dnsOptions: [], embedded: null, hostNetwork: true }), 'nameserver 127.0.0.53\n')
})
