//go:build integration

package integration

import (
	"slices"
	"strings"
	"testing"
)

// TestKrunServiceLowLimit: a krun run under a low open-file limit (prlimit
// --nofile=512:512, as a constrained session's `ulimit -n`) that finds no podman
// service starts one, which inherits that hard limit. A krun run with the usual
// limit asks runc for a container limit of its own hard limit, which that service
// cannot give:
//   - while the limited session still uses the service, the run stops with an error
//     that names the service's pid, both limits and what to do, and the service
//     (and the session on it) is left alone; doctor's "podman service limits" row
//     says the same;
//   - once it ended, the run restarts the idle service with its own limit and runs.
//
// Before, such a run failed with runc's "error setting rlimit type 7: operation not
// permitted" (and so did every krun run after it until the service idled out).
func TestKrunServiceLowLimit(t *testing.T) {
	requirePodman(t)
	sock := suiteServiceSocket()
	// The start state: no service, so that the limited session is the one that starts it.
	noIdleService(t, sock)
	p := newProject(t)
	limited := command(t.Context(), p.dir, baseEnv(), "--isolator=krun", "--", "/bin/sh", "-c", `echo "ready $(ulimit -Hn)"; read x`)
	limited.Args = append([]string{"/usr/bin/prlimit", "--nofile=512:512", "--", it.bin}, limited.Args[1:]...)
	limited.Path = "/usr/bin/prlimit"
	lines, release := started(t, limited)
	lines.waitFor("ready 512")
	services := podmanServices(sock)
	if len(services) == 0 {
		t.Fatalf("the limited session runs on no service on %s", sock)
	}
	stopLowServices(t, sock)
	r := run(t, p.dir, nil, "", "--isolator=krun", "--", "true")
	if r.code == 0 || strings.Contains(r.stderr, "rlimit type") ||
		!strings.Contains(r.stderr, "allows 512 open files") || !strings.Contains(r.stderr, "other devsandbox sessions use that service") {
		t.Errorf("the run while the limited session holds the service: want the error that names the limit, not runc's:\n%s", r)
	}
	t.Logf("the run while the limited session holds the service:\n%s", r.stderr)
	// doctor says the same in a row of its own.
	d := run(t, p.dir, []string{"XDG_RUNTIME_DIR=" + runtimeDir()}, "", "doctor")
	row := ""
	for _, l := range strings.Split(d.stdout, "\n") {
		if strings.HasPrefix(l, "podman service limits") {
			row = l
		}
	}
	if !strings.Contains(row, "allows 512 open files") {
		t.Errorf("doctor's podman service limits row %q does not name the service's limit:\n%s", row, d)
	}
	if now := podmanServices(sock); !slices.Equal(now, services) {
		t.Errorf("the service the limited session uses changed under it: %v, before %v", now, services)
	}
	release()
	if err := limited.Wait(); err != nil {
		t.Fatalf("the limited session (its service stopped under it?): %v", err)
	}
	// The service is idle (and lives on for ServiceIdle, 10 s): the next run restarts it.
	if len(podmanServices(sock)) == 0 {
		t.Fatalf("the limited session's service on %s ended before the next run: this test proves nothing", sock)
	}
	r = run(t, p.dir, nil, "", "--isolator=krun", "--", "/bin/sh", "-c", "ulimit -Hn")
	if r.code != 0 || strings.TrimSpace(r.stdout) == "512" {
		t.Fatalf("the run after the limited session ended (want its own hard limit, not 512):\n%s", r)
	}
	for _, pid := range podmanServices(sock) {
		if slices.Contains(services, pid) {
			t.Errorf("the service started under nofile 512 (%v) still runs (pid %d)", services, pid)
		}
	}
}
