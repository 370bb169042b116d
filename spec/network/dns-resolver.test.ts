// What the embedded resolver answers for a container, as dockerd's: its networks' names, network-qualified names,
// link aliases, PTR records, empty answers for the other family, ndots, forwarding.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { nameTable, resolveName, resolveQuery, ptrAddress, type ResolverView } from '../../lib/network/dns-resolver.js'
import { parseQuery, TYPE_A, TYPE_AAAA, TYPE_PTR } from '../../lib/network/dns-codec.js'

function query (name: string, type: number): Buffer {
  const labels = name.split('.').flatMap((l) => [Buffer.from([l.length]), Buffer.from(l)])
  const t = Buffer.alloc(4)
  t.writeUInt16BE(type, 0); t.writeUInt16BE(1, 2)
  return Buffer.concat([Buffer.from('beef01000001000000000000', 'hex'), ...labels, Buffer.from([0]), t])
}

const front = nameTable([
  { names: ['web', 'www', '0123456789ab'], name: 'web', v4: '10.1.0.2', v6: 'fd00::2' },
  { names: ['proxy'], name: 'proxy', v4: '10.1.0.3', v6: '' }
])
const back = nameTable([
  { names: ['db', 'database'], name: 'db', v4: '10.2.0.5', v6: '' },
  { names: ['web'], name: 'web', v4: '10.2.0.2', v6: '' }
])

function view (o: Partial<ResolverView> = {}): ResolverView {
  return { endpoints: [{ network: 'front', links: new Map(), table: front }, { network: 'back.net', links: new Map([['sql', 'db']]), table: back }], ndots: false, forwards: true, ...o }
}

test('resolver: a name of any network the container is on, and name.network', () => {
  assert.deepEqual(resolveName(view(), 'db', false), ['10.2.0.5'])
  assert.deepEqual(resolveName(view(), 'DATABASE.', false), ['10.2.0.5'])
  assert.deepEqual(resolveName(view(), 'web', false), ['10.1.0.2']) // the first network that knows it
  assert.deepEqual(resolveName(view(), 'web.back.net', false), ['10.2.0.2'])
  assert.deepEqual(resolveName(view(), 'proxy.back.net', false), null)
  assert.deepEqual(resolveName(view(), '0123456789ab', false), ['10.1.0.2'])
  assert.equal(resolveName(view(), 'nothing', false), null)
})

test('resolver: link aliases resolve to their target on that endpoint\'s network only', () => {
  assert.deepEqual(resolveName(view(), 'sql', false), ['10.2.0.5'])
  assert.deepEqual(resolveName(view(), 'sql.back.net', false), ['10.2.0.5'])
  assert.equal(resolveName(view(), 'sql.front', false), null)
})

test('resolver: a known name without an address of the family asked gets an empty answer, not a forward', () => {
  assert.deepEqual(resolveName(view(), 'db', true), [])
  assert.deepEqual(resolveName(view(), 'web', true), ['fd00::2'])
  const r = resolveQuery(query('db', TYPE_AAAA), false, view())
  assert.ok('reply' in r)
  assert.equal(r.reply.readUInt16BE(6), 0)
  assert.equal(r.reply.readUInt16BE(2) & 0xf, 0)
  const six = resolveQuery(query('web', TYPE_AAAA), false, view())
  assert.ok('reply' in six)
  assert.equal(six.reply.subarray(six.reply.length - 16).toString('hex'), 'fd000000000000000000000000000002')
})

test('resolver: PTR of a network address is name.network', () => {
  assert.equal(ptrAddress('5.0.2.10.in-addr.arpa.'), '10.2.0.5')
  assert.equal(ptrAddress('2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa'), 'fd00::2')
  const r = resolveQuery(query('5.0.2.10.in-addr.arpa', TYPE_PTR), false, view())
  assert.ok('reply' in r)
  assert.match(r.reply.toString('latin1'), /\x02db\x04back\x03net\x00$/)
  assert.deepEqual(resolveQuery(query('9.9.9.9.in-addr.arpa', TYPE_PTR), false, view()), { forward: true })
})

test('resolver: other names are forwarded; without upstreams SERVFAIL; with ndots a single label is not sent out', () => {
  assert.deepEqual(resolveQuery(query('example.com', TYPE_A), false, view()), { forward: true })
  const none = resolveQuery(query('example.com', TYPE_A), false, view({ forwards: false }))
  assert.ok('reply' in none)
  assert.equal(none.reply.readUInt16BE(2) & 0xf, 2)
  const nd = resolveQuery(query('nothing', TYPE_A), false, view({ ndots: true }))
  assert.ok('reply' in nd)
  assert.equal(nd.reply.readUInt16BE(2) & 0xf, 0)
  assert.deepEqual(resolveQuery(query('no.thing', TYPE_A), false, view({ ndots: true })), { forward: true })
  const a = resolveQuery(query('db', TYPE_A), false, view())
  assert.ok('reply' in a)
  assert.equal(parseQuery(query('db', TYPE_A))?.id, a.reply.readUInt16BE(0))
})
