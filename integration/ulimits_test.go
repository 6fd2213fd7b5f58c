//go:build integration

package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestKrunContainersConfUlimits: a user's containers.conf whose default_ulimits ask
// more locked memory than the podman service may give (above its hard
// RLIMIT_MEMLOCK, which runc cannot raise), and another core size, does not reach
// the container: devsandbox's spec sets every rlimit, nofile and nproc its own, every
// other at the service's own value, so podman has none to add (podman 5 adds
// containers.conf's to an API-created container where the spec sets none, and runc
// then fails with "error setting rlimit type 8: operation not permitted"). The
// sandbox's locked memory and core size are the service's, which are the run's.
func TestKrunContainersConfUlimits(t *testing.T) {
	requirePodman(t)
	var memlock, core unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &memlock); err != nil {
		t.Fatal(err)
	}
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &core); err != nil {
		t.Fatal(err)
	}
	if memlock.Max == unix.RLIM_INFINITY {
		t.Skip("the hard RLIMIT_MEMLOCK is unlimited: no containers.conf value is above it")
	}
	p := newProject(t)
	above := memlock.Max * 2
	p.write("containers.conf", fmt.Sprintf("[containers]\ndefault_ulimits = [\"memlock=%d:%d\", \"core=4096:4096\"]\n", above, above))
	conf := "CONTAINERS_CONF=" + p.path("containers.conf")
	sock := suiteServiceSocket(conf)
	// The service of this configuration ends once idle; none may outlive the test.
	t.Cleanup(func() { requireServiceGone(t, sock, 25*time.Second) })
	script := `while read -r a b c d e f g; do case "$a $b $c" in "Max locked memory") echo "memlock $d:$e";; "Max core file") echo "core $e:$f";; esac; done </proc/self/limits`
	r := run(t, p.dir, []string{"XDG_RUNTIME_DIR=" + runtimeDir(), conf}, "", "--isolator=krun", "--", "/bin/sh", "-c", script)
	value := func(v uint64) string {
		if v == unix.RLIM_INFINITY {
			return "unlimited"
		}
		return fmt.Sprint(v)
	}
	want := fmt.Sprintf("core %s:%s\nmemlock %s:%s", value(core.Cur), value(core.Max), value(memlock.Cur), value(memlock.Max))
	if r.code != 0 || strings.Contains(r.stderr, "rlimit type") || strings.TrimSpace(r.stdout) != want {
		t.Fatalf("a krun run with containers.conf default_ulimits memlock=%d (above the service's hard %d) and core=4096: want the run's own\n%s\nhave:\n%s", above, memlock.Max, want, r)
	}
	if len(podmanServices(sock)) == 0 {
		t.Errorf("no podman service on %s: the run did not use the containers.conf's service", sock)
	}
	// doctor says so in its krun row.
	d := run(t, p.dir, []string{"XDG_RUNTIME_DIR=" + runtimeDir(), conf}, "", "doctor")
	if row := doctorRow(d.stdout, "podman service limits"); !strings.Contains(row, "nofile ") || !strings.Contains(row, "other 14 rlimits at its own values, so a containers.conf's default_ulimits add none") {
		t.Errorf("doctor's podman service limits row %q does not say the container is given every other rlimit of the service's:\n%s", row, d)
	}
}
