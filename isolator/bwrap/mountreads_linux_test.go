package bwrap

import (
	"strings"
	"testing"
)

// The reads bubblewrap 0.8.0 makes of the mount table for each op. The plain-bwrap
// cases are the counts strace gave on Debian 12 (bubblewrap 0.8.0, Linux 6.1): 7 as a
// user, 8 with a terminal for stdout, 8 with the pid namespace shared, 9 as root
// (/proc/irq and /proc/bus covered; no sysrq-trigger there).
func TestMountTableReads(t *testing.T) {
	plain := "--unshare-all --ro-bind / / --dev /dev --proc /proc true"
	missing := func(p string) bool { return p != "/gone" && p != "/proc/sysrq-trigger" }
	for _, tc := range []struct {
		name, argv string
		h          readHost
		want       int
	}{
		{"plain bwrap as a user", plain, readHost{}, 7},
		{"plain bwrap, stdout a terminal", plain, readHost{tty: true}, 8},
		{"plain bwrap, pid namespace shared", "--unshare-user --ro-bind / / --dev /dev --proc /proc true", readHost{}, 8},
		{"plain bwrap as root", plain, readHost{root: true, exists: missing}, 9},
		{"each bind form once", "--bind a /a --ro-bind b /b --dev-bind c /c --bind-fd 5 /d --ro-bind-fd 6 /e -- x", readHost{}, 5},
		{"data binds and remounts", "--perms 0400 --ro-bind-data 7 /run/secrets/k --bind-data 8 /f --remount-ro /h --remount-ro / -- x", readHost{}, 4},
		{"-try with its source there", "--bind-try /a /a --ro-bind-try /b /b --dev-bind-try /c /c -- x", readHost{exists: missing}, 3},
		{"-try with its source missing", "--bind-try /gone /a --ro-bind-try /gone /b --dev-bind-try /gone /c -- x", readHost{exists: missing}, 0},
		{"no mount, no read", "--tmpfs /run --perms 0444 --file 6 /etc/x --symlink usr/bin /bin --dir /d --chmod 0700 /d --mqueue /q -- x", readHost{}, 0},
		{"arguments are not ops", "--setenv --bind x --chdir --dev --seccomp 7 --cap-drop ALL --uid 1 --gid 1 -- x", readHost{}, 0},
		{"the command's words are not ops", "--dev /dev -- sh --bind a b", readHost{}, 6},
		{"nor after the first non-option", "--dev /dev sh --bind a b", readHost{}, 6},
		{"a truncated op", "--remount-ro / --bind a", readHost{}, 1},
	} {
		argv := append([]string{"bwrap"}, strings.Fields(tc.argv)...)
		if got := mountTableReads(argv, tc.h); got != tc.want {
			t.Errorf("%s: %d reads, want %d (%s)", tc.name, got, tc.want, tc.argv)
		}
	}
}
