//go:build integration

package integration

import (
	"strings"
	"testing"
)

// initProbe tries, from the command, to reach the init that started it (the
// command's parent: pid 1 under bwrap and in a one-shot container, the session init
// exec'd into a kept container) and the container's pid 1: its descriptors (the
// host's frame stream, the readiness socket), its environment and memory (which held
// the session's hello: secret values before the command got them), its cwd and
// executable. fd 0 and mem are only opened (a read would take the host's frames; mem
// at offset 0 is unmapped). It prints its parent's name first, then each one
// reached; "done" alone means none was.
const initProbe = `echo "parent $(cat /proc/$PPID/comm)"
for pid in $PPID 1; do
ls /proc/$pid/fd >/dev/null 2>&1 && echo "LISTED /proc/$pid/fd"
for fd in 0 1 2 3 4 5 6 7 8; do readlink /proc/$pid/fd/$fd >/dev/null 2>&1 && echo "REACHED /proc/$pid/fd/$fd"; done
(exec </proc/$pid/fd/0) 2>/dev/null && echo "OPENED /proc/$pid/fd/0"
head -c1 /proc/$pid/environ >/dev/null 2>&1 && echo "READ /proc/$pid/environ"
(exec </proc/$pid/mem) 2>/dev/null && echo "OPENED /proc/$pid/mem"
readlink /proc/$pid/cwd >/dev/null 2>&1 && echo "REACHED /proc/$pid/cwd"
readlink /proc/$pid/exe >/dev/null 2>&1 && echo "REACHED /proc/$pid/exe"
done
echo done`

// The init is out of the command's reach in every isolator: the command runs as the
// same user, without capabilities, and the init is non-dumpable from its start, with
// or without a secret in the session's hello, in a one-shot or a kept container.
//
// On a rootless engine the command may list the init's /proc/PID/fd, and only that:
// a non-dumpable process's /proc entries belong to its user namespace's root
// (the kernel's task_dump_owner), which is the command there; what the listing shows
// is which descriptor numbers are open. Reading a link, opening a descriptor, the
// environment or the memory need ptrace access, which a non-dumpable process grants
// only to CAP_SYS_PTRACE.
func TestInitUnreachable(t *testing.T) {
	forEachIsolatorOf(t, withRootless(isolators()), func(t *testing.T, iso string) {
		p := newProject(t)
		cases := []struct {
			name  string
			flags []string
		}{
			{"open", []string{"--egress=open"}},
			{"proxy", []string{"--egress=proxy"}},
			{"secret", []string{"--egress=none", "-e", "INITREACH_SECRET"}},
		}
		switch iso {
		case localDocker, remoteDocker:
			cases = append(cases,
				struct {
					name  string
					flags []string
				}{"kept", []string{"--egress=none", "--keep-container", "-e", "INITREACH_SECRET"}})
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				args := append([]string{"--isolator=" + iso}, c.flags...)
				args = append(args, "--", "/bin/sh", "-c", initProbe)
				r := run(t, p.dir, []string{"INITREACH_SECRET=initreach-5e3a"}, "", args...)
				parent, rest, _ := strings.Cut(r.stdout, "\n")
				if r.code != 0 || !strings.Contains(parent, "init") {
					t.Fatalf("the command's parent is not the init:\n%s", r)
				}
				if iso == rootlessDocker {
					rest = strings.ReplaceAll(rest, "LISTED /proc/1/fd\n", "")
				}
				if strings.TrimSpace(rest) != "done" {
					t.Errorf("the command reached its init:\n%s", r)
				}
			})
		}
	})
}
