//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeDockerd is fakePodman under the name an engine's own process has: it renames
// itself dockerd (its comm, which any process may set for itself), the name the
// listener check takes for an engine that binds this machine's files.
const fakeDockerd = `open("/proc/self/comm", "w").write("dockerd")
` + fakePodman

// TestDockerTakesNoPlantedEngine: a sandbox shown the directory of the socket
// DOCKER_HOST names read-write (a rootless engine's $XDG_RUNTIME_DIR/docker.sock,
// a forwarded socket's directory, bound by the user) while no engine listens there
// plants a listener calling itself dockerd. A docker launch of the user's
// meanwhile must not talk to it: it would send it the containers' configuration
// and, on the attach, the session's secrets; it would also be taken for a local
// engine (its name), whose runs bind this machine's files.
//
// The same with the name podman's Docker-compatible service has (podman), which
// counts as local when its root directory is this machine's: the sandbox's is not,
// and the listener is refused as planted all the same.
func TestDockerTakesNoPlantedEngine(t *testing.T) {
	requireBwrap(t)
	requireEngine(t, localDocker)
	for _, name := range []string{"dockerd", "podman"} {
		t.Run(name, func(t *testing.T) {
			p := newProject(t)
			p.mkdir("run")
			if err := os.Chmod(p.path("run"), 0o700); err != nil {
				t.Fatal(err)
			}
			fake := strings.Replace(fakeDockerd, `write("dockerd")`, `write("`+name+`")`, 1)
			p.write(filepath.Join(filepath.Base(p.dir), "fake.py"), fake) // in the project: the sandbox sees it
			sock := filepath.Join(p.path("run"), "docker.sock")
			caught := filepath.Join(p.dir, "caught")
			cfg := p.writeConfig("bwrap", "cfg/dev.toml", "[sandbox]\nrw_binds = [\""+p.path("run")+"\"]\n")
			cmd := command(t.Context(), p.dir, baseEnv(), "--isolator=bwrap", "--egress=open", "--config", cfg, "--", "/usr/bin/python3", filepath.Join(p.dir, "fake.py"), sock, caught)
			lines, _ := started(t, cmd)
			lines.waitForIn(60e9, "ready")
			r := run(t, p.dir, []string{"DOCKER_HOST=unix://" + sock}, "", "--isolator=docker", "--", "/bin/true")
			got, _ := os.ReadFile(caught)
			if len(got) > 0 {
				t.Errorf("a docker launch took the sandbox's listener (%s) at %s for an engine and sent it:\n%s\n(the launch: %s)", name, sock, got, r)
			}
			if r.code != 125 || !strings.Contains(r.stderr, sock) || !strings.Contains(r.stderr, "planted") {
				t.Errorf("want the launch refused (125), naming the listener (%s) at %s as planted:\n%s", name, sock, r)
			}
		})
	}
}
