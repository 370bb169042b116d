// A minimal tar codec (pure): ustar headers with the GNU long-name and PAX extensions when reading, ustar plus a
// PAX record for long or non-ASCII names when writing. The builder reads the build context through it without
// unpacking, and writes COPY layers with it.

export const BLOCK = 512

export type TarType = 'file' | 'link' | 'symlink' | 'directory' | 'pax' | 'pax-global' | 'gnu-long-name' | 'gnu-long-link' | 'other'

export interface TarHeader {
  name: string
  mode: number
  uid: number
  gid: number
  size: number
  mtime: number
  type: TarType
  linkname: string
}

function cstr (b: Buffer, off: number, len: number): string {
  const end = b.indexOf(0, off)
  return b.toString('utf8', off, end === -1 || end > off + len ? off + len : end)
}

function num (b: Buffer, off: number, len: number): number {
  if (((b[off] as number) & 0x80) !== 0) {
    // GNU base-256 (sizes over 8 GiB, negative times)
    let v = (b[off] as number) & 0x7f
    for (let i = 1; i < len; i++) v = v * 256 + (b[off + i] as number)
    return v
  }
  const s = b.toString('latin1', off, off + len).replace(/\0.*$/s, '').trim()
  return s === '' ? 0 : parseInt(s, 8)
}

const TYPES: Readonly<Record<string, TarType>> = {
  '0': 'file', '\0': 'file', '7': 'file', '1': 'link', '2': 'symlink', '5': 'directory',
  x: 'pax', g: 'pax-global', L: 'gnu-long-name', K: 'gnu-long-link'
}

/** Parses one header block; null for an all-zero block (the end of the archive). Throws on a bad checksum. */
export function parseHeader (b: Buffer): TarHeader | null {
  if (b.length < BLOCK) throw new Error('unexpected end of data in a tar header')
  let zero = true
  for (let i = 0; i < BLOCK; i++) if (b[i] !== 0) { zero = false; break }
  if (zero) return null
  let sum = 0
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : b[i] as number
  if (sum !== num(b, 148, 8)) throw new Error('invalid tar header checksum')
  let name = cstr(b, 0, 100)
  if (b.toString('latin1', 257, 262) === 'ustar') {
    const prefix = cstr(b, 345, 155)
    if (prefix !== '') name = `${prefix}/${name}`
  }
  return {
    name,
    mode: num(b, 100, 8),
    uid: num(b, 108, 8),
    gid: num(b, 116, 8),
    size: num(b, 124, 12),
    mtime: num(b, 136, 12),
    type: TYPES[String.fromCharCode(b[156] as number)] ?? 'other',
    linkname: cstr(b, 157, 100)
  }
}

/** PAX records (`len key=value\n`) → a map. */
export function parsePax (data: Buffer): Map<string, string> {
  const out = new Map<string, string>()
  let i = 0
  while (i < data.length) {
    const sp = data.indexOf(32, i)
    if (sp === -1) break
    const len = parseInt(data.toString('latin1', i, sp), 10)
    if (!(len > 0)) break
    const rec = data.toString('utf8', sp + 1, i + len - 1)
    const eq = rec.indexOf('=')
    if (eq !== -1) out.set(rec.slice(0, eq), rec.slice(eq + 1))
    i += len
  }
  return out
}

export function padding (size: number): number { return (BLOCK - (size % BLOCK)) % BLOCK }

function octal (b: Buffer, value: number, off: number, len: number): void {
  b.write(value.toString(8).padStart(len - 1, '0') + '\0', off, len, 'latin1')
}

function paxRecord (key: string, value: string): Buffer {
  const body = ` ${key}=${value}\n`
  const base = Buffer.byteLength(body)
  // the length counts its own digits: iterate to the fixed point
  let len = base + 1
  while (String(len).length + base !== len) len = String(len).length + base
  return Buffer.from(`${len}${body}`)
}

const TYPE_FLAG: Readonly<Record<string, string>> = { file: '0', link: '1', symlink: '2', directory: '5', pax: 'x' }

function ustar (h: TarHeader, name: string, linkname: string): Buffer {
  const b = Buffer.alloc(BLOCK)
  b.write(name, 0, 100, 'utf8')
  octal(b, h.mode & 0o7777, 100, 8)
  octal(b, h.uid, 108, 8)
  octal(b, h.gid, 116, 8)
  octal(b, h.size, 124, 12)
  octal(b, Math.max(0, Math.floor(h.mtime)), 136, 12)
  b.write('        ', 148, 8, 'latin1')
  b.write(TYPE_FLAG[h.type] ?? '0', 156, 1, 'latin1')
  b.write(linkname, 157, 100, 'utf8')
  b.write('ustar\x0000', 257, 8, 'latin1')
  let sum = 0
  for (let i = 0; i < BLOCK; i++) sum += b[i] as number
  b.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8, 'latin1')
  return b
}

/** The header block(s) of one entry (a PAX record first when the name or link target does not fit). */
export function encodeHeader (h: TarHeader): Buffer {
  const ascii = /^[\x20-\x7e]*$/
  const name = h.type === 'directory' && !h.name.endsWith('/') ? h.name + '/' : h.name
  const longName = Buffer.byteLength(name) > 100 || !ascii.test(name)
  const longLink = Buffer.byteLength(h.linkname) > 100 || !ascii.test(h.linkname)
  if (!longName && !longLink) return ustar(h, name, h.linkname)
  const recs = Buffer.concat([...(longName ? [paxRecord('path', name)] : []), ...(longLink ? [paxRecord('linkpath', h.linkname)] : [])])
  const pax = ustar({ name: 'PaxHeader', mode: 0o644, uid: 0, gid: 0, size: recs.length, mtime: h.mtime, type: 'pax', linkname: '' }, 'PaxHeader', '')
  return Buffer.concat([pax, recs, Buffer.alloc(padding(recs.length)), ustar(h, name.slice(0, 100), h.linkname.slice(0, 100))])
}
