//go:build integration

package integration

import (
	"os"
	"strings"
	"testing"
	"time"
)

// Finding 5 (guarantee 7 for kept containers): every process of a session dies with
// it, whatever its state. A process whose leader thread exited while another thread
// runs (a zombie in /proc) must not live on in the kept container and read a later
// session's secrets, nor one whose session init was killed under it.
func TestKeptContainerSurvivors(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) { testKeptContainerSurvivors(t, iso) })
}

func testKeptContainerSurvivors(t *testing.T, iso string) {
	for _, tc := range []struct{ name, end string }{
		{"session ends", `true`},
		{"session init killed", `kill -9 $PPID`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t)
			keep := []string{"--isolator=" + iso, "--keep-container", "--egress=none"}
			settle(p, iso, keep[1:])
			p.installAttack("proj/attack")
			ids := projectContainers(t, iso, p, false)
			if len(ids) != 1 {
				t.Fatalf("want one kept container, have %v", ids)
			}
			before := len(containerPids(t, iso, ids[0]))
			const secret = "LINGER-7c1e-secret"
			p.sandbox(iso, keep[1:], `./attack linger found.txt LINGER-7c1e </dev/null >/dev/null 2>&1 &
				while [ "$(cut -d' ' -f3 /proc/$!/stat)" != Z ]; do sleep 0.02; done; `+tc.end)
			deadline := time.Now().Add(3 * time.Second)
			for n := len(containerPids(t, iso, ids[0])); n != before; n = len(containerPids(t, iso, ids[0])) {
				if time.Now().After(deadline) {
					t.Fatalf("a session's process outlived it: %d processes in the kept container, %d before:\n%s", n, before, dockerAt(t, iso, "top", ids[0]))
				}
				time.Sleep(50 * time.Millisecond)
			}
			p.write("secret.txt", secret+"-file\n")
			if r := run(t, p.dir, []string{"LINGER_SECRET=" + secret}, "", append(keep, "-e", "LINGER_SECRET", "--secret-file", "s="+p.path("secret.txt"), "--", "/bin/sh", "-c", `sleep 0.5`)...); r.code != 0 {
				t.Fatalf("a later session:\n%s", r)
			}
			if b, err := os.ReadFile(p.path("proj/found.txt")); err == nil && strings.Contains(string(b), "LINGER") {
				t.Fatalf("a process of an earlier session read a later session's secrets: %s", b)
			}
		})
	}
}
