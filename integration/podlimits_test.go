//go:build integration

package integration

import (
	"strings"
	"testing"
	"time"
)

// TestKrunServiceLowLimit: a krun run under a low open-file limit (prlimit
// --nofile=512:512, as a constrained session's `ulimit -n`) that finds no podman
// service starts one, which inherits that hard limit; a krun run right after it,
// with the usual limit, asks runc for a container limit of its own hard limit and
// must still run: the idle service with the lower limit is restarted, never reused
// to fail with runc's "error setting rlimit type 7: operation not permitted".
// Before, the second run failed with that error (and so did every krun run after it
// until the service idled out).
func TestKrunServiceLowLimit(t *testing.T) {
	requirePodman(t)
	sock := suiteServiceSocket()
	// The start state: no service, so that the limited run is the one that starts it.
	requireServiceGone(t, sock, 25*time.Second)
	p := newProject(t)
	r := runBin(t, "/usr/bin/prlimit", p.dir, nil, "", "--nofile=512:512", "--", it.bin, "--isolator=krun", "--", "/bin/sh", "-c", "ulimit -Hn")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "512" {
		t.Fatalf("the run under prlimit --nofile=512:512 (want its container's hard limit 512):\n%s", r)
	}
	services := podmanServices(sock)
	if len(services) == 0 {
		t.Fatalf("the limited run left no service on %s (ServiceIdle is 10 s): this test proves nothing", sock)
	}
	r = run(t, p.dir, nil, "", "--isolator=krun", "--", "/bin/sh", "-c", "ulimit -Hn")
	if r.code != 0 {
		t.Fatalf("the run after the limited one (service %v started under nofile 512):\n%s", services, r)
	}
	if strings.Contains(r.stderr, "rlimit") {
		t.Errorf("the run said runc's rlimit error:\n%s", r)
	}
	if n := strings.TrimSpace(r.stdout); n == "512" {
		t.Errorf("the run's container has the limited run's hard limit %s, not its own", n)
	}
}
