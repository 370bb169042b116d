// Linux capabilities by number, and the ones this host can grant (its bounding set, /proc/self/status CapBnd).

export const CAPABILITY_NUMBERS: Readonly<Record<string, number>> = {
  CAP_CHOWN: 0, CAP_DAC_OVERRIDE: 1, CAP_DAC_READ_SEARCH: 2, CAP_FOWNER: 3, CAP_FSETID: 4, CAP_KILL: 5, CAP_SETGID: 6,
  CAP_SETUID: 7, CAP_SETPCAP: 8, CAP_LINUX_IMMUTABLE: 9, CAP_NET_BIND_SERVICE: 10, CAP_NET_BROADCAST: 11,
  CAP_NET_ADMIN: 12, CAP_NET_RAW: 13, CAP_IPC_LOCK: 14, CAP_IPC_OWNER: 15, CAP_SYS_MODULE: 16, CAP_SYS_RAWIO: 17,
  CAP_SYS_CHROOT: 18, CAP_SYS_PTRACE: 19, CAP_SYS_PACCT: 20, CAP_SYS_ADMIN: 21, CAP_SYS_BOOT: 22, CAP_SYS_NICE: 23,
  CAP_SYS_RESOURCE: 24, CAP_SYS_TIME: 25, CAP_SYS_TTY_CONFIG: 26, CAP_MKNOD: 27, CAP_LEASE: 28, CAP_AUDIT_WRITE: 29,
  CAP_AUDIT_CONTROL: 30, CAP_SETFCAP: 31, CAP_MAC_OVERRIDE: 32, CAP_MAC_ADMIN: 33, CAP_SYSLOG: 34, CAP_WAKE_ALARM: 35,
  CAP_BLOCK_SUSPEND: 36, CAP_AUDIT_READ: 37, CAP_PERFMON: 38, CAP_BPF: 39, CAP_CHECKPOINT_RESTORE: 40
}

/** The capabilities of `all` whose bit is set in the CapBnd line of a /proc/<pid>/status text (all when absent). */
export function boundedCapabilities (all: readonly string[], statusText: string): string[] {
  const m = /^CapBnd:\s*([0-9a-fA-F]+)\s*$/m.exec(statusText)
  if (m === null) return [...all]
  const mask = BigInt(`0x${m[1] as string}`)
  return all.filter((c) => {
    const n = CAPABILITY_NUMBERS[c]
    return n === undefined || ((mask >> BigInt(n)) & 1n) === 1n
  })
}
