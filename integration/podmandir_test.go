//go:build integration

package integration

import (
	"os"
	"strings"
	"testing"
)

// TestPodmanRuntimeDirMaskedInBind: podman's runtime directory ($XDG_RUNTIME_DIR/podman)
// holds the socket, log and locks of the service devsandbox starts for krun, which the
// next krun launch dials and opens. A read-write bind of the runtime directory showed it
// writable: a run planted a link at the service log's name (the next service start
// truncated the file it named; see TestServiceLogFollowsNoLink) and could plant a
// listener at the service's socket. It is now masked in such a bind, as Docker sockets
// are, unless sandbox.docker_socket.
func TestPodmanRuntimeDirMaskedInBind(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	p.mkdir("run/podman")
	if err := os.Chmod(p.path("run"), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := p.writeConfig("bwrap", "cfg/dev.toml", "[sandbox]\nrw_binds = [\""+p.path("run")+"\"]\n")
	env := []string{"XDG_RUNTIME_DIR=" + p.path("run")}
	plant := "ln -s " + p.path("victim") + " " + p.path("run/podman/devsandbox-runc.sock.log") + " && echo PLANTED; : > " + p.path("run/other") + " && echo BIND-WRITABLE"
	r := run(t, p.dir, env, "", "--isolator=bwrap", "--config", cfg, "--", "/bin/sh", "-c", plant)
	if strings.Contains(r.stdout, "PLANTED") || !strings.Contains(r.stdout, "BIND-WRITABLE") {
		t.Errorf("a read-write bind of the runtime directory: want podman's directory masked, the rest writable:\n%s", r)
	}
	if _, err := os.Lstat(p.path("run/podman/devsandbox-runc.sock.log")); err == nil {
		t.Errorf("the link was planted in podman's runtime directory")
	}
}
