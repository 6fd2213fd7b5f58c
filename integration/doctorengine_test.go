//go:build integration

package integration

import (
	"strings"
	"testing"
)

// TestDoctorEngineFiles: doctor's "docker engine files" row says whose files the
// configured engine binds and why, as a run would judge it (the listener on the
// pinned socket), without starting a container: dockerd's own socket, this machine's
// engine or the stand-in's, binds this machine's files; a relay in front of an engine
// (ssh -L, socat: here the test's own process) makes a run take the remote path, and
// in front of an engine older than API 1.45 (this machine's dockerd 20.10) the row
// warns that writable anchors such as .git are refused; a tcp:// engine (docker-tcp)
// is another machine's by its address.
func TestDoctorEngineFiles(t *testing.T) {
	row := func(t *testing.T, env []string) string {
		t.Helper()
		p := newProject(t)
		args, env := isolatorArgs([]string{"--isolator=docker", "doctor"}, env)
		r := run(t, p.dir, env, "", args...)
		l := doctorRow(r.stdout, "docker engine files")
		if l == "" {
			t.Fatalf("doctor %v %v printed no docker engine files row:\n%s", env, args, r)
		}
		return l
	}
	check := func(t *testing.T, line string, want ...string) {
		t.Helper()
		t.Log(line)
		for _, w := range want {
			if !strings.Contains(line, w) {
				t.Errorf("doctor's row:\n%s\nwant it to say %q", line, w)
			}
		}
	}
	forEachDocker(t, func(t *testing.T, iso string) {
		switch iso {
		case tcpDocker:
			check(t, row(t, tcpEnv()), "active  ", "another machine's, for all devsandbox can tell: not a Unix socket", "volume devsandbox-<name>-home")
			return
		case rootlessDocker:
			t.Skip("a rootless engine's socket: TestRootlessDoctor")
		}
		line := row(t, []string{"DOCKER_HOST=" + engineOf(iso)})
		check(t, line, "active  ", "this machine's: the process listening on "+strings.TrimPrefix(engineOf(iso), "unix://")+` is "dockerd"`, "binds the project and the sandbox home from this host")
	})
	t.Run("a relay to Docker 26", func(t *testing.T) {
		requireEngine(t, remoteDocker)
		if apiBefore(engineAPI[remoteDocker], "1.45") {
			t.Skipf("the stand-in speaks API %s", engineAPI[remoteDocker])
		}
		relay := relayTo(t, strings.TrimPrefix(remoteEngine, "unix://"))
		line := row(t, []string{"DOCKER_HOST=unix://" + relay})
		check(t, line, "active  ", "another machine's", "the process listening on "+relay, "a relay (ssh -L, socat", "volume devsandbox-<name>-home", "mounts writable anchors as volume sub-paths")
	})
	t.Run("a relay to Docker 20.10", func(t *testing.T) {
		requireEngine(t, localDocker)
		if !apiBefore(engineAPI[localDocker], "1.45") {
			t.Skipf("this machine's engine speaks API %s", engineAPI[localDocker])
		}
		relay := relayTo(t, "/var/run/docker.sock")
		line := row(t, []string{"DOCKER_HOST=unix://" + relay})
		check(t, line, "warning  ", "another machine's", "a relay (ssh -L, socat", "older than 1.45", "writable anchor (a repository's .git", "is refused", "fix: upgrade the engine to Docker 26")
	})
}
