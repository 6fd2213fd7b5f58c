//go:build integration

package integration

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestHostViewEngineSocketMasked: with system_binds = ["host"] (read-only /), the
// engine socket devsandbox itself is configured with — docker.host, the docker CLI's
// current context, krun.podman_socket — is masked like the well-known ones, wherever
// it lies. A read-only mount does not stop connect(2) on a socket: on main a bwrap
// sandbox reached a docker engine at /var/lib/... that docker.host named (the
// stand-in engine's socket here; LXD's and a rootful dockerd's own -H path alike)
// and got its answer, root on the host for a sandboxed command.
func TestHostViewEngineSocketMasked(t *testing.T) {
	requireBwrap(t)
	dir, err := os.MkdirTemp("/var/tmp", "dsb-enginesock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "engine.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	// Group docker's members may connect to a real one: here, the test user.
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprint(c, "ENGINE-ANSWERED\n")
			c.Close()
		}
	}()
	// Docker CLI config directories with a context naming the socket: current in
	// config.json in one, named by DOCKER_CONTEXT only in the other.
	dockerConfig := func(name, current string) string {
		d := filepath.Join(dir, name)
		meta := filepath.Join(d, "contexts", "meta", contextID("stand"), "meta.json")
		if err := os.MkdirAll(filepath.Dir(meta), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(meta, []byte(`{"Name":"stand","Metadata":{},"Endpoints":{"docker":{"Host":"unix://`+sock+`","SkipTLSVerify":false}}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "config.json"), []byte(`{"currentContext":"`+current+`"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	current, named := dockerConfig("current", "stand"), dockerConfig("named", "")
	script := fmt.Sprintf(`python3 -c "
import socket
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
try:
    s.connect('%s')
    print(s.recv(64).decode().strip())
except OSError as e:
    print('refused')
"`, sock)
	for _, tc := range []struct {
		name, config string
		env          []string
	}{
		{"docker.host", "[docker]\nhost = \"unix://" + sock + "\"\n", nil},
		{"docker context", "", []string{"DOCKER_CONFIG=" + current}},
		{"DOCKER_CONTEXT", "", []string{"DOCKER_CONFIG=" + named, "DOCKER_CONTEXT=stand"}},
		{"krun.podman_socket", "[krun]\npodman_socket = \"" + sock + "\"\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t)
			cfg := p.writeConfig("bwrap", "hostview.toml", "[sandbox]\nsystem_binds = [\"host\"]\n"+tc.config)
			r := run(t, p.dir, tc.env, "", "--isolator=bwrap", "--config", cfg, "--egress=none", "--", "/bin/sh", "-c", script)
			if r.code != 0 || r.stdout != "refused\n" {
				t.Fatalf("with system_binds = [\"host\"] and %s naming %s: want the engine socket masked (exit 0, \"refused\"), got:\n%s", tc.name, sock, r)
			}
		})
	}
}
