//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakePodman listens on the path argv[1] and appends what each client sends to
// argv[2]: a stand-in for podman's API service, planted by a sandbox.
const fakePodman = `import os, socket, sys
os.makedirs(os.path.dirname(sys.argv[1]), exist_ok=True)
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(8)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    c.settimeout(2)
    try:
        data = c.recv(4096)
    except OSError:
        data = b""
    if data:
        with open(sys.argv[2], "ab") as f:
            f.write(data.split(b"\r\n")[0] + b"\n")
    c.close()
`

// TestKrunTakesNoPlantedService: a sandbox shown the user's runtime directory
// read-write (a bind of yours) while podman's directory in it does not exist yet (so
// no mask covers it) makes podman/ and listens at the socket of the service
// devsandbox starts for krun. A krun launch of yours meanwhile must not take that
// listener for podman's service: it would send it the container's spec and, on the
// attach, the hello with the session's secrets.
func TestKrunTakesNoPlantedService(t *testing.T) {
	requireBwrap(t)
	requirePodman(t)
	p := newProject(t)
	p.mkdir("run")
	if err := os.Chmod(p.path("run"), 0o700); err != nil {
		t.Fatal(err)
	}
	p.write(filepath.Join(filepath.Base(p.dir), "fake.py"), fakePodman) // in the project: the sandbox sees it
	sock := filepath.Join(p.path("run"), "podman", filepath.Base(suiteServiceSocket()))
	caught := filepath.Join(p.dir, "caught")
	cfg := p.writeConfig("bwrap", "cfg/dev.toml", "[sandbox]\nrw_binds = [\""+p.path("run")+"\"]\n")
	env := []string{"XDG_RUNTIME_DIR=" + p.path("run")}
	cmd := command(t.Context(), p.dir, baseEnv(env...), "--isolator=bwrap", "--config", cfg, "--", "/usr/bin/python3", filepath.Join(p.dir, "fake.py"), sock, caught)
	lines, _ := started(t, cmd)
	lines.waitForIn(60e9, "ready")
	r := run(t, p.dir, env, "", "--isolator=krun", "--", "/bin/true")
	got, _ := os.ReadFile(caught)
	if len(got) > 0 {
		t.Errorf("a krun launch took the sandbox's listener at %s for podman's service and sent it:\n%s\n(the launch: %s)", sock, got, r)
	}
	if r.code == 0 || !strings.Contains(r.stderr, "the process listening on podman's API socket "+sock) || !strings.Contains(r.stderr, "is not podman's service") {
		t.Errorf("want the launch refused, naming the listener at %s:\n%s", sock, r)
	}
}
