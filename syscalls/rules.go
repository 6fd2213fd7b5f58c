package syscalls

import (
	"slices"
	"sort"
)

// Action is what the policy does with a system call.
type Action int

const (
	// Allow runs the call.
	Allow Action = iota
	// Deny refuses it with EPERM.
	Deny
	// Absent refuses it with ENOSYS, as a kernel without it would: callers fall back
	// (C libraries from clone3 to clone, runtimes from io_uring to epoll and threads).
	Absent
	// AllowIf runs it when one of the Rule's AllowIf matches, and refuses it with
	// EPERM otherwise.
	AllowIf
	// DenyIf refuses it with EPERM when one of the Rule's DenyIf conditions holds,
	// and runs it otherwise.
	DenyIf
)

func (a Action) String() string {
	return [...]string{"allow", "deny", "absent", "allow-if", "deny-if"}[a]
}

// Cond holds when (argument Arg & Mask) == Value. A Mask with no bit above 31
// compares the low 32 bits only: what the kernel reads of an int argument.
type Cond struct {
	Arg   int
	Mask  uint64
	Value uint64
}

// Match holds when all of its conditions hold.
type Match []Cond

// Rule is the disposition of one system call.
type Rule struct {
	Name    string
	Action  Action
	AllowIf []Match // Action AllowIf: allowed when any holds
	// DenyIf (Action DenyIf): refused when any holds. Each compares the low 32 bits
	// of one argument (Mask 0xffffffff): the kernel truncates such arguments, so a
	// value with high bits set is the same request (the bypass of CVE-2019-10063).
	DenyIf []Cond
	Why    string // why the call is refused or restricted, for people
}

// Rules is a compiled policy: one Rule per system call name any supported
// architecture has, sorted by name.
type Rules []Rule

// Rule returns the rule for name.
func (rs Rules) Rule(name string) (Rule, bool) {
	i, ok := sort.Find(len(rs), func(i int) int {
		switch {
		case name < rs[i].Name:
			return -1
		case name > rs[i].Name:
			return 1
		}
		return 0
	})
	if !ok {
		return Rule{}, false
	}
	return rs[i], true
}

// Linux constants the rules compare arguments with; the same on every supported
// architecture (this package builds on every platform, so it cannot take them from
// golang.org/x/sys/unix).
const (
	lo32 = 0xffffffff

	cloneNewNS     = 0x00020000
	cloneNewCgroup = 0x02000000
	cloneNewUTS    = 0x04000000
	cloneNewIPC    = 0x08000000
	cloneNewUser   = 0x10000000
	cloneNewPID    = 0x20000000
	cloneNewNet    = 0x40000000
	// cloneNamespaces are the namespace flags clone takes (CLONE_NEWTIME only
	// clone3 and unshare can take), as Docker's profile masks them.
	cloneNamespaces = cloneNewNS | cloneNewCgroup | cloneNewUTS | cloneNewIPC | cloneNewUser | cloneNewPID | cloneNewNet

	afUnix    = 1
	afInet    = 2
	afInet6   = 10
	afNetlink = 16

	netlinkRoute    = 0 // addresses and routes: getifaddrs, ip, Go's net.Interfaces
	netlinkSockDiag = 4 // socket lists: ss

	tiocSTI   = 0x5412 // push a byte into a terminal's input
	tiocLINUX = 0x541c // virtual console requests; one pastes the selection as input
	tiocSETD  = 0x5423 // set the line discipline (loads n_gsm, n_hdlc, ...)
)

// allowed are the calls every policy allows: what the default profiles of both Docker
// and podman allow a process without capabilities on amd64 and arm64, except ioctl
// and socketpair, which are restricted below.
var allowed = []string{
	"accept", "accept4", "access", "adjtimex", "alarm", "arch_prctl", "bind", "brk", "capget",
	"capset", "chdir", "chmod", "chown", "clock_adjtime", "clock_getres", "clock_gettime",
	"clock_nanosleep", "close", "close_range", "connect", "copy_file_range", "creat", "dup", "dup2",
	"dup3", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_pwait",
	"epoll_pwait2", "epoll_wait", "epoll_wait_old", "eventfd", "eventfd2", "execve", "execveat",
	"exit", "exit_group", "faccessat", "faccessat2", "fadvise64", "fallocate", "fanotify_mark",
	"fchdir", "fchmod", "fchmodat", "fchmodat2", "fchown", "fchownat", "fcntl", "fdatasync",
	"fgetxattr", "flistxattr", "flock", "fork", "fremovexattr", "fsetxattr", "fstat", "fstatfs",
	"fsync", "ftruncate", "futex", "futimesat", "get_robust_list", "get_thread_area", "getcpu",
	"getcwd", "getdents", "getdents64", "getegid", "geteuid", "getgid", "getgroups", "getitimer",
	"getpeername", "getpgid", "getpgrp", "getpid", "getppid", "getpriority", "getrandom", "getresgid",
	"getresuid", "getrlimit", "getrusage", "getsid", "getsockname", "getsockopt", "gettid",
	"gettimeofday", "getuid", "getxattr", "inotify_add_watch", "inotify_init", "inotify_init1",
	"inotify_rm_watch", "io_cancel", "io_destroy", "io_getevents", "io_setup", "io_submit",
	"ioprio_get", "ioprio_set", "kill", "landlock_add_rule", "landlock_create_ruleset",
	"landlock_restrict_self", "lchown", "lgetxattr", "link", "linkat", "listen", "listxattr",
	"llistxattr", "lremovexattr", "lseek", "lsetxattr", "lstat", "madvise", "membarrier",
	"memfd_create", "memfd_secret", "mincore", "mkdir", "mkdirat", "mknod", "mknodat", "mlock",
	"mlock2", "mlockall", "mmap", "modify_ldt", "mprotect", "mq_getsetattr", "mq_notify", "mq_open",
	"mq_timedreceive", "mq_timedsend", "mq_unlink", "mremap", "msgctl", "msgget", "msgrcv", "msgsnd",
	"msync", "munlock", "munlockall", "munmap", "name_to_handle_at", "nanosleep", "newfstatat",
	"open", "openat", "openat2", "pause", "pidfd_open", "pidfd_send_signal", "pipe", "pipe2",
	"pkey_alloc", "pkey_free", "pkey_mprotect", "poll", "ppoll", "prctl", "pread64", "preadv",
	"preadv2", "prlimit64", "process_mrelease", "process_vm_readv", "process_vm_writev", "pselect6",
	"ptrace", "pwrite64", "pwritev", "pwritev2", "read", "readahead", "readlink", "readlinkat",
	"readv", "recvfrom", "recvmmsg", "recvmsg", "remap_file_pages", "removexattr", "rename",
	"renameat", "renameat2", "restart_syscall", "rmdir", "rseq", "rt_sigaction", "rt_sigpending",
	"rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait",
	"rt_tgsigqueueinfo", "sched_get_priority_max", "sched_get_priority_min", "sched_getaffinity",
	"sched_getattr", "sched_getparam", "sched_getscheduler", "sched_rr_get_interval",
	"sched_setaffinity", "sched_setattr", "sched_setparam", "sched_setscheduler", "sched_yield",
	"seccomp", "select", "semctl", "semget", "semop", "semtimedop", "sendfile", "sendmmsg", "sendmsg",
	"sendto", "set_robust_list", "set_thread_area", "set_tid_address", "setfsgid", "setfsuid",
	"setgid", "setgroups", "setitimer", "setpgid", "setpriority", "setregid", "setresgid",
	"setresuid", "setreuid", "setrlimit", "setsid", "setsockopt", "setuid", "setxattr", "shmat",
	"shmctl", "shmdt", "shmget", "shutdown", "sigaltstack", "signalfd", "signalfd4",
	"splice", "stat", "statfs", "statx", "symlink", "symlinkat", "sync", "sync_file_range", "syncfs",
	"sysinfo", "tee", "tgkill", "time", "timer_create", "timer_delete", "timer_getoverrun",
	"timer_gettime", "timer_settime", "timerfd_create", "timerfd_gettime", "timerfd_settime", "times",
	"tkill", "truncate", "umask", "uname", "unlink", "unlinkat", "utime", "utimensat", "utimes",
	"vfork", "wait4", "waitid", "write", "writev",
}

// refusal is a set of calls refused outright, and why; group, when set, allows them.
type refusal struct {
	names  []string
	action Action // Deny or Absent
	group  Group
	why    string
}

var refusals = []refusal{
	{[]string{"unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "mount_setattr", "move_mount",
		"open_tree", "open_tree_attr", "fsopen", "fsconfig", "fsmount", "fspick"}, Deny, UserNS,
		"namespaces and mounts: a new user namespace gives root's view of the kernel's mount, netfilter and other interfaces"},
	{[]string{"clone3"}, Absent, UserNS,
		"clone3's flags are out of a filter's reach; without it C libraries use clone, whose flags are checked"},
	{[]string{"io_uring_setup", "io_uring_enter", "io_uring_register"}, Absent, IOURing,
		"io_uring: its operations bypass syscall filtering; runtimes fall back to epoll and threads"},
	{[]string{"perf_event_open"}, Deny, Perf, "perf events: a large kernel surface; sampling profilers that use timers keep working"},
	{[]string{"bpf"}, Deny, "", "eBPF programs"},
	{[]string{"add_key", "keyctl", "request_key"}, Deny, "", "the kernel keyring is not namespaced"},
	{[]string{"userfaultfd"}, Deny, "", "userfaultfd mostly serves kernel exploits"},
	{[]string{"init_module", "finit_module", "delete_module", "create_module", "query_module", "get_kernel_syms",
		"kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd",
		"syslog", "sethostname", "setdomainname", "settimeofday", "clock_settime", "iopl", "ioperm", "vhangup",
		"lookup_dcookie", "fanotify_init", "open_by_handle_at"}, Deny, "",
		"the host's administration (what the container runtimes grant only with a capability)"},
	{[]string{"kcmp", "pidfd_getfd", "process_madvise"}, Deny, "", "reaching into other processes beyond ptrace"},
	{[]string{"get_mempolicy", "set_mempolicy", "set_mempolicy_home_node", "mbind", "migrate_pages", "move_pages"},
		Deny, "", "NUMA placement (the container runtimes grant it only with CAP_SYS_NICE)"},
	{[]string{"vmsplice"}, Deny, "", "refused by podman's default profile"},
}

// absentWhy is the reason of calls the policy does not name: obsolete, unimplemented
// or newer than it (refused as a kernel without them would).
const absentWhy = "not in the policy: obsolete, unused in a sandbox, or newer than it"

// conditional are the calls allowed or refused by their arguments, and the group
// that allows them whatever the arguments.
var conditional = []struct {
	rule  Rule
	group Group
}{
	{Rule{Name: "clone", Action: AllowIf,
		AllowIf: []Match{{{Arg: 0, Mask: cloneNamespaces, Value: 0}}},
		Why:     "new namespaces are refused (the flags CLONE_NEWUSER, CLONE_NEWNS, ...)"}, UserNS},
	{Rule{Name: "socket", Action: AllowIf,
		AllowIf: []Match{
			{{Arg: 0, Mask: lo32, Value: afUnix}},
			{{Arg: 0, Mask: lo32, Value: afInet}},
			{{Arg: 0, Mask: lo32, Value: afInet6}},
			{{Arg: 0, Mask: lo32, Value: afNetlink}, {Arg: 2, Mask: lo32, Value: netlinkRoute}},
			{{Arg: 0, Mask: lo32, Value: afNetlink}, {Arg: 2, Mask: lo32, Value: netlinkSockDiag}},
		},
		Why: "only Unix, IPv4, IPv6 and netlink for routes and socket lists: other families (AF_PACKET, AF_VSOCK, AF_TIPC, AF_ALG, ...) are kernel surface a sandbox has no use for"}, Sockets},
	{Rule{Name: "socketpair", Action: AllowIf,
		AllowIf: []Match{{{Arg: 0, Mask: lo32, Value: afUnix}}},
		Why:     "only Unix socket pairs"}, Sockets},
	{Rule{Name: "ioctl", Action: DenyIf,
		DenyIf: []Cond{{Arg: 1, Mask: lo32, Value: tiocSTI}, {Arg: 1, Mask: lo32, Value: tiocLINUX}, {Arg: 1, Mask: lo32, Value: tiocSETD}},
		Why:    "TIOCSTI and TIOCLINUX inject input into a terminal; TIOCSETD loads line disciplines (kernel surface)"}, ""},
	{Rule{Name: "personality", Action: AllowIf,
		// All 64 bits, as the runtimes compare them.
		AllowIf: []Match{
			{{Arg: 0, Mask: ^uint64(0), Value: 0}},          // PER_LINUX
			{{Arg: 0, Mask: ^uint64(0), Value: 0x8}},        // PER_LINUX32
			{{Arg: 0, Mask: ^uint64(0), Value: 0x20000}},    // UNAME26
			{{Arg: 0, Mask: ^uint64(0), Value: 0x20008}},    // PER_LINUX32 | UNAME26
			{{Arg: 0, Mask: ^uint64(0), Value: 0xffffffff}}, // query
		},
		Why: "only the personalities the container runtimes allow"}, ""},
}

// Compile returns the rules of p: one for every system call name of the supported
// architectures, sorted by name.
func Compile(p Policy) Rules {
	rs := make(Rules, len(allNames))
	for i, n := range allNames {
		rs[i] = Rule{Name: n, Action: Absent, Why: absentWhy}
	}
	set := func(r Rule) {
		if i, ok := slices.BinarySearch(allNames[:], r.Name); ok {
			rs[i] = r
		}
	}
	for _, n := range allowed {
		set(Rule{Name: n, Action: Allow})
	}
	for _, rf := range refusals {
		for _, n := range rf.names {
			if rf.group != "" && p.Relaxed(rf.group) {
				set(Rule{Name: n, Action: Allow})
				continue
			}
			set(Rule{Name: n, Action: rf.action, Why: rf.why})
		}
	}
	for _, c := range conditional {
		if c.group != "" && p.Relaxed(c.group) {
			set(Rule{Name: c.rule.Name, Action: Allow})
			continue
		}
		set(c.rule)
	}
	return rs
}
