//go:build integration

package integration

import (
	"net"
	"os"
	"strings"
	"testing"
)

// A docker engine that does not answer — its socket is there, nobody listens — on a
// new project: the run says so (the address, where it came from, what to do) and
// counts as the isolator being unavailable, which is what mode auto and isolator
// auto act on (docs/isolators.md: the availability probe runs after a failed launch).
func TestEngineDoesNotAnswer(t *testing.T) {
	requireEngine(t, localDocker) // the suite's docker setup: devsandbox-docker installed
	p := newProject(t)
	sock := p.path("dead.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close() // the socket file stays; connecting to it is refused
	if err := os.Chown(sock, it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	writeHome(t, ".ssh/engine-bait", "BAIT\n")
	// A file mask: the first request of a run on a new project is then for its
	// volume, whatever tools are detected (PATH=/nonexistent finds none).
	p.write("proj/.env", "TOKEN=x\n")
	check := `read l 2>/dev/null < ~/.ssh/engine-bait && echo "$l" || echo sandboxed`
	engine := "DOCKER_HOST=unix://" + sock
	down := "the docker engine at unix://" + sock + " (DOCKER_HOST) does not answer"
	fix := "install and start Docker (Debian/Ubuntu: sudo apt-get install docker.io && sudo systemctl start docker), or set docker.host / DOCKER_HOST"

	for _, tc := range []struct {
		name   string
		env    []string
		args   []string
		code   int
		stdout string
		stderr []string // in this order
	}{
		{"docker chosen, enforce", nil, []string{"--isolator=docker"}, 125, "",
			[]string{"devsandbox: isolator unavailable: " + down, fix}},
		{"docker chosen, mode auto", nil, []string{"--isolator=docker", "--mode=auto"}, 0, "BAIT\n",
			[]string{"devsandbox: warning: the docker isolator cannot run (isolator unavailable: " + down, fix, "sandbox.mode = auto, so the command runs WITHOUT a sandbox"}},
		{"auto falls back to docker, enforce", []string{"PATH=/nonexistent"}, nil, 125, "",
			[]string{"falling back to the docker isolator", "devsandbox: isolator unavailable: " + down, fix}},
		{"auto falls back to docker, mode auto", []string{"PATH=/nonexistent"}, []string{"--mode=auto"}, 0, "BAIT\n",
			[]string{"falling back to the docker isolator", down, "so the command runs WITHOUT a sandbox"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string(nil), tc.args...), "--", "/bin/sh", "-c", check)
			r := run(t, p.dir, append([]string{engine}, tc.env...), "", args...)
			if r.code != tc.code || r.stdout != tc.stdout || !inOrder(r.stderr, tc.stderr) || strings.Contains(r.stderr, "volume") {
				t.Errorf("want exit %d, stdout %q, stderr with %q:\n%s", tc.code, tc.stdout, tc.stderr, r)
			}
		})
	}
}

// inOrder reports whether s holds each of parts, one after the other.
func inOrder(s string, parts []string) bool {
	for _, part := range parts {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return true
}
