//go:build integration

package integration

import (
	"strings"
	"testing"
	"time"
)

// TestKrunServiceLowNproc: a krun run under a low task limit (prlimit
// --nproc=1000:1000) that finds no podman service starts one, which inherits that
// hard RLIMIT_NPROC. The next krun run, with the usual limits, asks runc for a
// container RLIMIT_NPROC of limits.pids (4096), which that service cannot give.
func TestKrunServiceLowNproc(t *testing.T) {
	requirePodman(t)
	sock := suiteServiceSocket()
	requireServiceGone(t, sock, 25*time.Second)
	p := newProject(t)
	limited := command(t.Context(), p.dir, baseEnv(), "--isolator=krun", "--", "/bin/sh", "-c", hardNprocScript("ready"))
	limited.Args = append([]string{"/usr/bin/prlimit", "--nproc=1000:1000", "--", it.bin}, limited.Args[1:]...)
	limited.Path = "/usr/bin/prlimit"
	out, err := limited.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ready 1000") {
		t.Fatalf("the run under nproc 1000: %v\n%s", err, out)
	}
	r := run(t, p.dir, nil, "", "--isolator=krun", "--", "/bin/sh", "-c", hardNprocScript("hard"))
	if r.code != 0 || strings.TrimSpace(r.stdout) != "hard 4096" {
		t.Fatalf("the run after the one under nproc 1000 (want limits.pids, 4096):\n%s", r)
	}
}

// hardNprocScript prints word and the hard RLIMIT_NPROC of the sandboxed shell (dash
// has no `ulimit -u`).
func hardNprocScript(word string) string {
	return `while read -r a b c d e; do [ "$a $b" = "Max processes" ] && echo "` + word + ` $d"; done </proc/self/limits; true`
}
