// Seccomp for containers: Docker's default policy written as our own data (what every container gets unless told
// otherwise), profiles in Docker's JSON format (`--security-opt seccomp=<file>`: the CLI sends the file's contents),
// and their translation into the OCI runtime spec's `linux.seccomp` for this machine's architecture and the
// container's capabilities. Pure: the caller passes capabilities, architecture and kernel version.
import { invalidArgument } from '../errors.js'
import { parseJson } from '../util/json-depth.js'

export interface SeccompArg { index: number, value: number, valueTwo?: number, op: string }

export interface SeccompRule {
  names?: string[]
  name?: string
  action: string
  errnoRet?: number
  args?: SeccompArg[] | null
  includes?: { caps?: string[], arches?: string[], minKernel?: string }
  excludes?: { caps?: string[], arches?: string[], minKernel?: string }
  comment?: string
}

/** Docker's seccomp profile format (what `--security-opt seccomp=<file>` holds). */
export interface SeccompProfile {
  defaultAction: string
  defaultErrnoRet?: number
  architectures?: string[]
  archMap?: Array<{ architecture: string, subArchitectures: string[] | null }>
  syscalls?: SeccompRule[]
  listenerPath?: string
  flags?: string[]
}

const words = (s: string): string[] => s.trim().split(/\s+/)

/** System calls every container may make (the default action refuses the rest with EPERM). */
const ALLOWED = words(`
  accept accept4 access adjtimex alarm bind brk capget capset chdir chmod chown chown32 clock_adjtime
  clock_adjtime64 clock_getres clock_getres_time64 clock_gettime clock_gettime64 clock_nanosleep
  clock_nanosleep_time64 close close_range connect copy_file_range creat dup dup2 dup3 epoll_create epoll_create1
  epoll_ctl epoll_ctl_old epoll_pwait epoll_pwait2 epoll_wait epoll_wait_old eventfd eventfd2 execve execveat exit
  exit_group faccessat faccessat2 fadvise64 fadvise64_64 fallocate fanotify_mark fchdir fchmod fchmodat fchown
  fchown32 fchownat fcntl fcntl64 fdatasync fgetxattr flistxattr flock fork fremovexattr fsetxattr fstat fstat64
  fstatat64 fstatfs fstatfs64 fsync ftruncate ftruncate64 futex futex_time64 futex_waitv futimesat getcpu getcwd
  getdents getdents64 getegid getegid32 geteuid geteuid32 getgid getgid32 getgroups getgroups32 getitimer
  getpeername getpgid getpgrp getpid getppid getpriority getrandom getresgid getresgid32 getresuid getresuid32
  getrlimit get_robust_list getrusage getsid getsockname getsockopt get_thread_area gettid gettimeofday getuid
  getuid32 getxattr inotify_add_watch inotify_init inotify_init1 inotify_rm_watch io_cancel ioctl io_destroy
  io_getevents io_pgetevents io_pgetevents_time64 ioprio_get ioprio_set io_setup io_submit io_uring_enter
  io_uring_register io_uring_setup ipc kill landlock_add_rule landlock_create_ruleset landlock_restrict_self lchown
  lchown32 lgetxattr link linkat listen listxattr llistxattr _llseek lremovexattr lseek lsetxattr lstat lstat64
  madvise membarrier memfd_create memfd_secret mincore mkdir mkdirat mknod mknodat mlock mlock2 mlockall mmap mmap2
  mprotect mq_getsetattr mq_notify mq_open mq_timedreceive mq_timedreceive_time64 mq_timedsend mq_timedsend_time64
  mq_unlink mremap msgctl msgget msgrcv msgsnd msync munlock munlockall munmap name_to_handle_at nanosleep newfstatat
  _newselect open openat openat2 pause pidfd_open pidfd_send_signal pipe pipe2 pkey_alloc pkey_free pkey_mprotect
  poll ppoll ppoll_time64 prctl pread64 preadv preadv2 prlimit64 process_mrelease pselect6 pselect6_time64 pwrite64
  pwritev pwritev2 read readahead readlink readlinkat readv recv recvfrom recvmmsg recvmmsg_time64 recvmsg
  remap_file_pages removexattr rename renameat renameat2 restart_syscall rmdir rseq rt_sigaction rt_sigpending
  rt_sigprocmask rt_sigqueueinfo rt_sigreturn rt_sigsuspend rt_sigtimedwait rt_sigtimedwait_time64 rt_tgsigqueueinfo
  sched_getaffinity sched_getattr sched_getparam sched_get_priority_max sched_get_priority_min sched_getscheduler
  sched_rr_get_interval sched_rr_get_interval_time64 sched_setaffinity sched_setattr sched_setparam
  sched_setscheduler sched_yield seccomp select semctl semget semop semtimedop semtimedop_time64 send sendfile
  sendfile64 sendmmsg sendmsg sendto setfsgid setfsgid32 setfsuid setfsuid32 setgid setgid32 setgroups setgroups32
  setitimer setpgid setpriority setregid setregid32 setresgid setresgid32 setresuid setresuid32 setreuid setreuid32
  setrlimit set_robust_list setsid setsockopt set_thread_area set_tid_address setuid setuid32 setxattr shmat shmctl
  shmdt shmget shutdown sigaltstack signalfd signalfd4 sigprocmask sigreturn socketcall socketpair splice stat
  stat64 statfs statfs64 statx symlink symlinkat sync sync_file_range syncfs sysinfo tee tgkill time timer_create
  timer_delete timer_getoverrun timer_gettime timer_gettime64 timer_settime timer_settime64 timerfd_create
  timerfd_gettime timerfd_gettime64 timerfd_settime timerfd_settime64 times tkill truncate truncate64 ugetrlimit
  umask uname unlink unlinkat utime utimensat utimensat_time64 utimes vfork vmsplice wait4 waitid waitpid write
  writev
`)

/** System calls a capability unlocks (Docker's default profile grants them only with it). */
const BY_CAPABILITY: Array<[string, string]> = [
  ['CAP_DAC_READ_SEARCH', 'open_by_handle_at'],
  ['CAP_SYS_ADMIN', `bpf clone clone3 fanotify_init fsconfig fsmount fsopen fspick lookup_dcookie mount mount_setattr
    move_mount open_tree perf_event_open quotactl quotactl_fd setdomainname sethostname setns syslog umount umount2
    unshare`],
  ['CAP_SYS_BOOT', 'reboot'],
  ['CAP_SYS_CHROOT', 'chroot'],
  ['CAP_SYS_MODULE', 'delete_module init_module finit_module'],
  ['CAP_SYS_PACCT', 'acct'],
  ['CAP_SYS_PTRACE', 'kcmp pidfd_getfd process_madvise process_vm_readv process_vm_writev ptrace'],
  ['CAP_SYS_RAWIO', 'iopl ioperm'],
  ['CAP_SYS_TIME', 'settimeofday stime clock_settime clock_settime64'],
  ['CAP_SYS_TTY_CONFIG', 'vhangup'],
  ['CAP_SYS_NICE', 'get_mempolicy mbind set_mempolicy set_mempolicy_home_node'],
  ['CAP_SYSLOG', 'syslog'],
  ['CAP_BPF', 'bpf'],
  ['CAP_PERFMON', 'perf_event_open']
]

/** Architecture-specific system calls (Go architecture names). */
const BY_ARCH: Array<[string[], string]> = [
  [['ppc64le'], 'sync_file_range2 swapcontext'],
  [['arm', 'arm64'], 'arm_fadvise64_64 arm_sync_file_range sync_file_range2 breakpoint cacheflush set_tls'],
  [['amd64', 'x32'], 'arch_prctl'],
  [['amd64', 'x32', 'x86'], 'modify_ldt'],
  [['s390', 's390x'], 's390_pci_mmio_read s390_pci_mmio_write s390_runtime_instr'],
  [['riscv64'], 'riscv_flush_icache']
]

/** personality(2) values that only select the usual execution domain (Linux, with or without 32-bit quirks). */
const PERSONALITIES = [0, 8, 131072, 131080, 4294967295]
/** CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET: clone() without CAP_SYS_ADMIN may set none of them. */
const CLONE_NAMESPACE_FLAGS = 2114060288
const AF_VSOCK = 40
const ENOSYS = 38

/** Go architecture name -> the seccomp architectures a filter must cover there. */
const ARCH_MAP: Record<string, string[]> = {
  amd64: ['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86', 'SCMP_ARCH_X32'],
  arm64: ['SCMP_ARCH_AARCH64', 'SCMP_ARCH_ARM'],
  mips64: ['SCMP_ARCH_MIPS64', 'SCMP_ARCH_MIPS', 'SCMP_ARCH_MIPS64N32'],
  mips64n32: ['SCMP_ARCH_MIPS64N32', 'SCMP_ARCH_MIPS', 'SCMP_ARCH_MIPS64'],
  mipsel64: ['SCMP_ARCH_MIPSEL64', 'SCMP_ARCH_MIPSEL', 'SCMP_ARCH_MIPSEL64N32'],
  mipsel64n32: ['SCMP_ARCH_MIPSEL64N32', 'SCMP_ARCH_MIPSEL', 'SCMP_ARCH_MIPSEL64'],
  s390x: ['SCMP_ARCH_S390X', 'SCMP_ARCH_S390'],
  riscv64: ['SCMP_ARCH_RISCV64']
}

/** Docker's default profile, as a profile in Docker's own format (so one translation serves it and user files). */
export function defaultSeccompProfile (): SeccompProfile {
  const syscalls: SeccompRule[] = [
    { names: ALLOWED, action: 'SCMP_ACT_ALLOW' },
    { names: ['process_vm_readv', 'process_vm_writev', 'ptrace'], action: 'SCMP_ACT_ALLOW', includes: { minKernel: '4.8' } },
    { names: ['socket'], action: 'SCMP_ACT_ALLOW', args: [{ index: 0, value: AF_VSOCK, op: 'SCMP_CMP_NE' }] },
    ...PERSONALITIES.map((value): SeccompRule => ({ names: ['personality'], action: 'SCMP_ACT_ALLOW', args: [{ index: 0, value, op: 'SCMP_CMP_EQ' }] })),
    ...BY_ARCH.map(([arches, names]): SeccompRule => ({ names: words(names), action: 'SCMP_ACT_ALLOW', includes: { arches } })),
    ...BY_CAPABILITY.map(([cap, names]): SeccompRule => ({ names: words(names), action: 'SCMP_ACT_ALLOW', includes: { caps: [cap] } })),
    { names: ['clone'], action: 'SCMP_ACT_ALLOW', args: [{ index: 0, value: CLONE_NAMESPACE_FLAGS, op: 'SCMP_CMP_MASKED_EQ' }], excludes: { caps: ['CAP_SYS_ADMIN'], arches: ['s390', 's390x'] } },
    // s390 passes clone's flags second
    { names: ['clone'], action: 'SCMP_ACT_ALLOW', args: [{ index: 1, value: CLONE_NAMESPACE_FLAGS, op: 'SCMP_CMP_MASKED_EQ' }], includes: { arches: ['s390', 's390x'] }, excludes: { caps: ['CAP_SYS_ADMIN'] } },
    // clone3's flags live in memory seccomp cannot read: ENOSYS makes libcs fall back to clone
    { names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: ENOSYS, excludes: { caps: ['CAP_SYS_ADMIN'] } }
  ]
  return { defaultAction: 'SCMP_ACT_ERRNO', defaultErrnoRet: 1, archMap: Object.entries(ARCH_MAP).map(([, a]) => ({ architecture: a[0] as string, subArchitectures: a.slice(1) })), syscalls }
}

/** This process's architecture in Go's naming (what profiles' `arches` use). */
export function goArch (nodeArch: string = process.arch): string {
  return ({ x64: 'amd64', ia32: 'x86', arm64: 'arm64', arm: 'arm', s390x: 's390x', ppc64: 'ppc64le', riscv64: 'riscv64', mips: 'mips', mipsel: 'mipsel' } as Record<string, string>)[nodeArch] ?? nodeArch
}

function kernelAtLeast (kernel: string, min: string): boolean {
  const a = kernel.split(/[.-]/).map((x) => Number.parseInt(x, 10))
  const b = min.split('.').map((x) => Number.parseInt(x, 10))
  for (let i = 0; i < b.length; i++) {
    const x = Number.isFinite(a[i]) ? a[i] as number : 0
    const y = b[i] as number
    if (x !== y) return x > y
  }
  return true
}

function scmpArchOf (arch: string): string | undefined {
  return ({ amd64: 'SCMP_ARCH_X86_64', arm64: 'SCMP_ARCH_AARCH64', s390x: 'SCMP_ARCH_S390X', riscv64: 'SCMP_ARCH_RISCV64', ppc64le: 'SCMP_ARCH_PPC64LE', x86: 'SCMP_ARCH_X86', arm: 'SCMP_ARCH_ARM' } as Record<string, string>)[arch]
}

/**
 * The OCI `linux.seccomp` for a profile: rules kept or dropped by their includes/excludes (capabilities the
 * container has, this architecture, the running kernel), architectures from the profile's archMap entry for this
 * machine (or its `architectures` list).
 */
export function ociSeccomp (profile: SeccompProfile, o: { caps: readonly string[], arch: string, kernel: string }): Record<string, unknown> {
  const applies = (rule: SeccompRule): boolean => {
    const inc = rule.includes ?? {}
    const exc = rule.excludes ?? {}
    if (inc.caps !== undefined && inc.caps.length > 0 && !inc.caps.every((c) => o.caps.includes(c))) return false
    if (inc.arches !== undefined && inc.arches.length > 0 && !inc.arches.includes(o.arch)) return false
    if (inc.minKernel !== undefined && inc.minKernel !== '' && !kernelAtLeast(o.kernel, inc.minKernel)) return false
    if (exc.caps !== undefined && exc.caps.some((c) => o.caps.includes(c))) return false
    if (exc.arches !== undefined && exc.arches.includes(o.arch)) return false
    if (exc.minKernel !== undefined && exc.minKernel !== '' && kernelAtLeast(o.kernel, exc.minKernel)) return false
    return true
  }
  let architectures: string[] = profile.architectures ?? []
  if (profile.archMap !== undefined && profile.archMap.length > 0) {
    const native = scmpArchOf(o.arch)
    const entry = profile.archMap.find((m) => m.architecture === native)
    architectures = entry === undefined ? [] : [entry.architecture, ...(entry.subArchitectures ?? [])]
  }
  const syscalls = (profile.syscalls ?? []).filter(applies).map((r) => {
    const out: Record<string, unknown> = { names: r.names ?? (r.name !== undefined ? [r.name] : []), action: r.action }
    if (r.errnoRet !== undefined) out.errnoRet = r.errnoRet
    if (r.args !== undefined && r.args !== null && r.args.length > 0) out.args = r.args.map((a) => ({ index: a.index, value: a.value, ...(a.valueTwo !== undefined ? { valueTwo: a.valueTwo } : {}), op: a.op }))
    return out
  })
  const spec: Record<string, unknown> = { defaultAction: profile.defaultAction, architectures, syscalls }
  if (profile.defaultErrnoRet !== undefined) spec.defaultErrnoRet = profile.defaultErrnoRet
  if (profile.flags !== undefined && profile.flags.length > 0) spec.flags = profile.flags
  if (profile.listenerPath !== undefined && profile.listenerPath !== '') spec.listenerPath = profile.listenerPath
  return spec
}

const ACTIONS = new Set(['SCMP_ACT_KILL', 'SCMP_ACT_KILL_PROCESS', 'SCMP_ACT_KILL_THREAD', 'SCMP_ACT_TRAP', 'SCMP_ACT_ERRNO', 'SCMP_ACT_TRACE', 'SCMP_ACT_ALLOW', 'SCMP_ACT_LOG', 'SCMP_ACT_NOTIFY'])
const OPS = new Set(['SCMP_CMP_NE', 'SCMP_CMP_LT', 'SCMP_CMP_LE', 'SCMP_CMP_EQ', 'SCMP_CMP_GE', 'SCMP_CMP_GT', 'SCMP_CMP_MASKED_EQ'])

/** A profile sent as `seccomp=<json>`; throws dockerd's "Decoding seccomp profile failed" for what cannot be used. */
export function parseSeccompProfile (text: string): SeccompProfile {
  const fail = (why: string): never => { throw invalidArgument(`Decoding seccomp profile failed: ${why}`) }
  let p: unknown
  try { p = parseJson(text) } catch (err) { return fail((err as Error).message) }
  if (p === null || typeof p !== 'object' || Array.isArray(p)) return fail('the profile is not a JSON object')
  const prof = p as SeccompProfile
  if (typeof prof.defaultAction !== 'string' || !ACTIONS.has(prof.defaultAction)) fail(`invalid defaultAction ${JSON.stringify(prof.defaultAction)}`)
  if (prof.architectures !== undefined && prof.archMap !== undefined && prof.architectures.length > 0 && prof.archMap.length > 0) {
    fail("use either 'architectures' or 'archMap'")
  }
  if (prof.architectures !== undefined && (!Array.isArray(prof.architectures) || !prof.architectures.every((a) => typeof a === 'string'))) fail('architectures must be a list of strings')
  if (prof.syscalls !== undefined && prof.syscalls !== null && !Array.isArray(prof.syscalls)) fail('syscalls must be a list')
  for (const r of prof.syscalls ?? []) {
    if (r === null || typeof r !== 'object') fail('a syscall rule is not an object')
    if (r.name !== undefined && r.names !== undefined && r.names.length > 0) fail("use either 'name' or 'names'")
    const names = r.names ?? (r.name !== undefined ? [r.name] : [])
    if (!Array.isArray(names) || !names.every((n) => typeof n === 'string')) fail('syscall names must be strings')
    if (typeof r.action !== 'string' || !ACTIONS.has(r.action)) fail(`invalid action ${JSON.stringify(r.action)}`)
    for (const a of r.args ?? []) {
      if (typeof a?.index !== 'number' || typeof a.value !== 'number' || typeof a.op !== 'string' || !OPS.has(a.op)) fail('invalid syscall argument rule')
    }
  }
  return prof
}

export type SeccompChoice = { kind: 'default' } | { kind: 'unconfined' } | { kind: 'profile', profile: SeccompProfile }

/**
 * The seccomp choice in HostConfig.SecurityOpt (`seccomp=unconfined|builtin|<profile JSON>`; `seccomp:…` is the old
 * spelling; the last one wins); Docker's default without one. A profile that cannot be used throws 400.
 */
export function seccompChoice (opts: readonly string[]): SeccompChoice {
  let choice: SeccompChoice = { kind: 'default' }
  for (const opt of opts) {
    if (!opt.startsWith('seccomp=') && !opt.startsWith('seccomp:')) continue
    const value = opt.slice('seccomp='.length)
    if (value === 'unconfined') choice = { kind: 'unconfined' }
    else if (value === 'builtin' || value === '') choice = { kind: 'default' }
    else choice = { kind: 'profile', profile: parseSeccompProfile(value) }
  }
  return choice
}
