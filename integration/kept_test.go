//go:build integration

package integration

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// Finding 5 (guarantee 7 for kept containers): every process of a session dies with
// it, whatever its state. A process whose leader thread exited while another thread
// runs (a zombie in /proc) must not live on in the kept container and read a later
// session's secrets, nor one whose session init was killed under it, nor one whose
// session init it stopped (SIGSTOP: the session init is not the container's pid 1,
// so the signal reaches it) before devsandbox was killed: the stopped init can
// neither see the host go nor end its session.
func TestKeptContainerSurvivors(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) { testKeptContainerSurvivors(t, iso) })
}

func testKeptContainerSurvivors(t *testing.T, iso string) {
	for _, tc := range []struct{ name, end string }{
		{"session ends", `true`},
		{"session init killed", `kill -9 $PPID`},
		{"session init stopped, devsandbox killed", `kill -STOP $PPID; touch stopped; sleep 1000`},
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
			script := `./attack linger found.txt LINGER-7c1e </dev/null >/dev/null 2>&1 &
				while [ "$(cut -d' ' -f3 /proc/$!/stat)" != Z ]; do sleep 0.02; done; ` + tc.end
			limit := 3 * time.Second
			if strings.Contains(tc.end, "STOP") {
				// The session init is stopped: the run never ends by itself, and is
				// killed once the init is (the marker). The keeper ends the session
				// once the host's stream is gone and a session init's grace passed.
				killStopped(t, p, iso, keep, script)
				limit = 10 * time.Second
			} else {
				p.sandbox(iso, keep[1:], script)
			}
			deadline := time.Now().Add(limit)
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

// killStopped runs script in a kept container, waits until it wrote the marker
// "stopped" (in proj/, the command's directory), and kills devsandbox with SIGKILL.
func killStopped(t *testing.T, p *project, iso string, keep []string, script string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := command(ctx, p.dir, baseEnv(), append(keep, "--", "/bin/sh", "-c", script)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	for {
		if _, err := os.Stat(p.path("proj/stopped")); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the command never stopped its session init")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}
