package bwrap

// bubblewrap before 0.13 reads the whole of /proc/self/mountinfo once in each call of
// bind_mount (bind-mount.c: parse_mountinfo), to find the mount it just made and set
// its flags; while it sets up, the host's mounts are in that table, under /oldroot.
// bubblewrap 0.8.0 (bubblewrap.c, setup_newroot and privileged_op) calls bind_mount
//   - once for each --bind, --ro-bind, --dev-bind and their -try forms (the -try form
//     not at all when its source is missing: the op is skipped before it mounts),
//     --bind-fd and --ro-bind-fd;
//   - once for each --bind-data and --ro-bind-data (a file written in the setup
//     root, then bound);
//   - once for each --remount-ro;
//   - six times for each --dev (null, zero, full, random, urandom, tty are bound from
//     the host's /dev), once more when bwrap's stdout is a terminal (/dev/console);
//   - for each --proc: once more when the pid namespace is shared (the host's /proc is
//     bound), and once for each of /proc/sys, sysrq-trigger, irq and bus the setup
//     can write: none for a user, whose user namespace does not map their owner; for
//     root those of sysrq-trigger, irq and bus that exist (/proc/sys refuses even
//     root's write access there: measured on Linux 6.1).
//
// Nothing else reads the table: --tmpfs, --file, --symlink, --dir, --chmod, --mqueue,
// the setup root's own tmpfs and binds, the pivots and the final unmount of the old
// root do not. devsandbox's own start (the Go runtime's cgroup probe) and the init's
// pin check (of the sandbox's table) each read once more, outside bwrap.

// readHost is what bwrap's reads depend on beyond its argv.
type readHost struct {
	// exists reports whether a -try op's source exists (stat, following links, as
	// bwrap's get_file_mode).
	exists func(path string) bool
	// tty is whether bwrap's stdout is a terminal.
	tty bool
	// root is whether bwrap runs as root, whose user namespace maps the owner of
	// /proc's files.
	root bool
}

// bwrapArity is the number of arguments of each bubblewrap option (0.8.0's).
var bwrapArity = map[string]int{
	"--help": 0, "--version": 0, "--level-prefix": 0, "--unshare-all": 0, "--share-net": 0,
	"--unshare-user": 0, "--unshare-user-try": 0, "--unshare-ipc": 0, "--unshare-pid": 0,
	"--unshare-net": 0, "--unshare-uts": 0, "--unshare-cgroup": 0, "--unshare-cgroup-try": 0,
	"--die-with-parent": 0, "--new-session": 0, "--as-pid-1": 0, "--clearenv": 0,
	"--disable-userns": 0, "--assert-userns-disabled": 0,

	"--args": 1, "--argv0": 1, "--chdir": 1, "--unsetenv": 1, "--lock-file": 1, "--sync-fd": 1,
	"--remount-ro": 1, "--exec-label": 1, "--file-label": 1, "--proc": 1, "--dev": 1,
	"--tmpfs": 1, "--mqueue": 1, "--dir": 1, "--seccomp": 1, "--add-seccomp-fd": 1,
	"--block-fd": 1, "--userns-block-fd": 1, "--info-fd": 1, "--json-status-fd": 1,
	"--cap-add": 1, "--cap-drop": 1, "--perms": 1, "--size": 1, "--uid": 1, "--gid": 1,
	"--hostname": 1, "--userns": 1, "--userns2": 1, "--pidns": 1,

	"--setenv": 2, "--bind": 2, "--bind-try": 2, "--ro-bind": 2, "--ro-bind-try": 2,
	"--dev-bind": 2, "--dev-bind-try": 2, "--bind-fd": 2, "--ro-bind-fd": 2, "--file": 2,
	"--bind-data": 2, "--ro-bind-data": 2, "--symlink": 2, "--chmod": 2,
}

// devNodes are the host devices --dev binds into its tmpfs.
const devNodes = 6

// procCovers are the /proc entries --proc binds read-only over themselves when root
// runs bwrap.
var procCovers = []string{"/proc/sysrq-trigger", "/proc/irq", "/proc/bus"}

// mountTableReads returns how many times bubblewrap before 0.13 reads the mount table
// while it sets up the sandbox of argv (a bwrap argv, "bwrap" first, as Spec.Argv),
// by the rules above. Options it does not know count nothing; the options end at
// "--" or at the first word that is not one (the command).
func mountTableReads(argv []string, h readHost) int {
	reads, procs := 0, 0
	sharedPid := true
	for i := 1; i < len(argv); i++ {
		op := argv[i]
		n, known := bwrapArity[op]
		if op == "--" || !known && (len(op) < 2 || op[:2] != "--") {
			break
		}
		if i+n >= len(argv) {
			break // bwrap refuses it: "takes N arguments"
		}
		switch op {
		case "--bind", "--ro-bind", "--dev-bind", "--bind-fd", "--ro-bind-fd",
			"--bind-data", "--ro-bind-data", "--remount-ro":
			reads++
		case "--bind-try", "--ro-bind-try", "--dev-bind-try":
			if h.exists == nil || h.exists(argv[i+1]) {
				reads++
			}
		case "--dev":
			reads += devNodes
			if h.tty {
				reads++
			}
		case "--proc":
			procs++
		case "--unshare-all", "--unshare-pid", "--pidns":
			sharedPid = false
		}
		i += n
	}
	for ; procs > 0; procs-- {
		if sharedPid {
			reads++
		}
		if h.root {
			for _, c := range procCovers {
				if h.exists == nil || h.exists(c) {
					reads++
				}
			}
		}
	}
	return reads
}
