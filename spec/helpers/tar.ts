// A ustar archive writer for specs: archives written here, not by the code under test.

export interface TarEntry {
  name: string
  type?: 'file' | 'dir' | 'symlink' | 'link'
  body?: Buffer | string
  linkname?: string
  mode?: number
  /** seconds since the epoch; 1700000000 unless given */
  mtime?: number
}

function octal (n: number, width: number): string {
  return n.toString(8).padStart(width - 1, '0') + '\0'
}

/** A ustar archive (names up to 100 bytes, uid and gid 0), ending with two zero blocks. */
export function makeTar (entries: TarEntry[]): Buffer {
  const parts: Buffer[] = []
  for (const e of entries) {
    const type = e.type ?? 'file'
    const body = type === 'file' ? Buffer.from(e.body ?? '') : Buffer.alloc(0)
    const h = Buffer.alloc(512)
    h.write(e.name, 0, 100, 'utf8')
    h.write(octal(e.mode ?? (type === 'dir' ? 0o755 : type === 'symlink' ? 0o777 : 0o644), 8), 100, 'ascii')
    h.write(octal(0, 8), 108, 'ascii')
    h.write(octal(0, 8), 116, 'ascii')
    h.write(octal(body.length, 12), 124, 'ascii')
    h.write(octal(e.mtime ?? 1700000000, 12), 136, 'ascii')
    h.write('        ', 148, 'ascii')
    h.write({ file: '0', dir: '5', symlink: '2', link: '1' }[type], 156, 'ascii')
    if (e.linkname !== undefined) h.write(e.linkname, 157, 100, 'utf8')
    h.write('ustar\0', 257, 'ascii')
    h.write('00', 263, 'ascii')
    let sum = 0
    for (const b of h) sum += b
    h.write(octal(sum, 7) + ' ', 148, 'ascii')
    parts.push(h, body)
    if (body.length % 512 !== 0) parts.push(Buffer.alloc(512 - (body.length % 512)))
  }
  parts.push(Buffer.alloc(1024))
  return Buffer.concat(parts)
}
