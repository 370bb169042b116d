#!/usr/bin/env node
// Builds a busybox root filesystem tar from Debian's busybox-static (/usr/bin/busybox or /bin/busybox):
// the binary, a symlink per applet, /etc/passwd, /etc/group, and the usual directories.
// Usage: node tools/make-busybox-rootfs.mjs OUT.tar   (then: docker import OUT.tar busybox:latest,
//        or POST /images/create?fromSrc=-&repo=busybox&tag=latest with the tar as the body)
import { mkdtempSync, mkdirSync, copyFileSync, symlinkSync, writeFileSync, chmodSync, rmSync, existsSync, createWriteStream } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { tmpdir } from 'node:os'
import { pipeline } from 'node:stream/promises'
import tar from 'tar-fs'

const out = process.argv[2]
if (out === undefined) { process.stderr.write('usage: make-busybox-rootfs.mjs OUT.tar\n'); process.exit(2) }
const bin = ['/usr/bin/busybox', '/bin/busybox'].find((p) => existsSync(p))
if (bin === undefined) { process.stderr.write('busybox not found: apt-get install busybox-static\n'); process.exit(1) }
const file = execFileSync('file', ['-L', bin], { encoding: 'utf8' }).toString()
if (!/statically linked|static-pie/.test(file)) { process.stderr.write(`${bin} is not static: apt-get install busybox-static\n`); process.exit(1) }

const root = mkdtempSync(join(tmpdir(), 'busybox-rootfs-'))
try {
  for (const d of ['bin', 'sbin', 'usr/bin', 'usr/sbin', 'etc', 'root', 'tmp', 'var/tmp', 'home', 'dev', 'proc', 'sys']) mkdirSync(join(root, d), { recursive: true })
  chmodSync(join(root, 'tmp'), 0o777)
  copyFileSync(bin, join(root, 'bin', 'busybox'))
  chmodSync(join(root, 'bin', 'busybox'), 0o755)
  const applets = execFileSync(bin, ['--list-full'], { encoding: 'utf8' }).split('\n').filter((a) => a !== '' && a !== 'bin/busybox')
  for (const a of applets) {
    const p = join(root, a)
    mkdirSync(join(p, '..'), { recursive: true })
    if (!existsSync(p)) symlinkSync('/bin/busybox', p)
  }
  writeFileSync(join(root, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/sh\ndaemon:x:1:1:daemon:/usr/sbin:/bin/false\nnobody:x:65534:65534:nobody:/home:/bin/false\n')
  writeFileSync(join(root, 'etc', 'group'), 'root:x:0:\ndaemon:x:1:\ntty:x:5:\nnogroup:x:65534:\n')
  await pipeline(tar.pack(root), createWriteStream(out))
} finally {
  rmSync(root, { recursive: true, force: true })
}
