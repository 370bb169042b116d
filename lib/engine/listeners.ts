// The Engine's listeners: the -H hosts turned into listen targets (fd:// among the sockets systemd passed), and each
// one listened on with what it needs (a Unix socket's group, an inherited socket's or a TCP host's request guard, TLS).
import { readFile } from 'node:fs/promises'
import type { ApiServer } from '../api/api-server.js'
import { parseHostSpec, formatAddress, type ListenTarget } from '../http/listen.js'
import { tcpRequestGuard, certificateNames, isLoopbackAddress, type RequestGuard } from '../http/tcp-guard.js'
import { invalidArgument } from '../errors.js'
import type { EngineOptions } from './engine-options.js'

type ListenerOptions = Pick<EngineOptions, 'socketGroup' | 'allowInsecureTcp' | 'tls'>

/** The sockets fd:// hosts select among those passed: all (fd://), by number (fd://3) or by name (fd://berth.socket). */
function selectFds (selector: string, fds: ReadonlyArray<{ fd: number, name: string }>): ListenTarget[] {
  if (fds.length === 0) throw invalidArgument(`no sockets were passed for fd://${selector}: start the daemon through systemd socket activation (LISTEN_FDS) or use unix:// or tcp://`)
  const chosen = selector === '' ? [...fds] : fds.filter((f) => String(f.fd) === selector || f.name === selector)
  if (chosen.length === 0) throw invalidArgument(`fd://${selector}: no such socket among those passed (${fds.map((f) => `${f.fd}${f.name !== '' ? ` (${f.name})` : ''}`).join(', ')})`)
  return chosen.map((f) => ({ kind: 'fd', fd: f.fd }))
}

/** The -H hosts as listen targets (fd:// hosts select among the sockets passed). */
export function listenTargets (hosts: string[], fds: ReadonlyArray<{ fd: number, name: string }>): ListenTarget[] {
  return hosts.map(parseHostSpec).flatMap((a) => a.kind === 'fd' ? selectFds(a.selector, fds) : [a])
}

/**
 * Listens on every address: Unix sockets (mode 0660, the socket group), inherited sockets, TCP with the request guard
 * (and TLS when configured). The directories made for Unix sockets' parents go into `created` as they are made (a
 * failed start removes them).
 */
export async function listenAll (api: ApiServer, addrs: ListenTarget[], opts: ListenerOptions, created: string[]): Promise<void> {
  const group = opts.socketGroup !== undefined ? { group: opts.socketGroup } : {}
  for (const addr of addrs) {
    if (addr.kind === 'unix') {
      await api.listen(addr, group)
      created.push(...api.createdDirs.filter((d) => !created.includes(d)))
      continue
    }
    if (addr.kind === 'fd') {
      // an inherited socket is Unix or TCP; a TCP one gets the TCP listeners' request guard (not TLS: use tcp://)
      let guard: RequestGuard | null = null
      const bound = await api.listen(addr, { guard: (req) => guard === null ? null : guard(req) })
      if (bound.kind === 'tcp') {
        if (!isLoopbackAddress(bound.host) && opts.allowInsecureTcp !== true) throw invalidArgument(`refusing the socket passed as fd ${addr.fd} (${formatAddress(bound)}): a non-loopback TCP socket without TLS (TLS is served on tcp:// hosts only), or accept the risk with --allow-insecure-tcp`)
        guard = tcpRequestGuard(bound.host)
      }
      continue
    }
    const t = opts.tls
    if (t === undefined) { await api.listen(addr, { guard: tcpRequestGuard(addr.host) }); continue }
    const [cert, key, ca] = await Promise.all([readFile(t.cert), readFile(t.key), t.ca !== undefined ? readFile(t.ca) : undefined])
    const verify = t.verify !== false
    if (verify && ca === undefined) throw invalidArgument('--tlsverify needs a CA certificate (--tlscacert) to check clients against')
    await api.listen(addr, {
      tls: { cert, key, ...(ca !== undefined ? { ca } : {}), requestCert: verify, rejectUnauthorized: verify, minVersion: 'TLSv1.2' },
      guard: tcpRequestGuard(addr.host, certificateNames(cert))
    })
  }
}
