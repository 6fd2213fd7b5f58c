//go:build integration

package integration

import (
	"fmt"
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
	// Group docker's members may connect to a real one: here, the test user (answerOn's 0666).
	answerOn(t, sock, "ENGINE-ANSWERED")
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
	script := unixConnectScript(sock)
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

// TestHostViewRuntimeDirMasked: with system_binds = ["host"], XDG_RUNTIME_DIR outside
// /run and the homes (WSLg's /mnt/wslg/runtime-dir, a fallback made by hand) is masked
// whole, like the other XDG base directories: it holds the D-Bus session bus (through
// which `systemd-run --user` runs anything on the host), agents' sockets and other
// devsandbox sessions' socket directories. On main a bwrap sandbox connected to the
// bus there and got its answer.
func TestHostViewRuntimeDirMasked(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	rt, err := os.MkdirTemp("/var/tmp", "dsb-runtime-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	if err := os.Chown(rt, it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	bus := filepath.Join(rt, "bus")
	answerOn(t, bus, "SESSION-BUS-ANSWERED")
	script := fmt.Sprintf("ls -A %s 2>/dev/null; %s", rt, unixConnectScript(bus))
	cfg := p.writeConfig("bwrap", "hostview.toml", "[sandbox]\nsystem_binds = [\"host\"]\n")
	r := run(t, p.dir, []string{"XDG_RUNTIME_DIR=" + rt}, "", "--isolator=bwrap", "--config", cfg, "--egress=none", "--", "/bin/sh", "-c", script)
	if r.code != 0 || r.stdout != "refused\n" {
		t.Fatalf("with system_binds = [\"host\"] and XDG_RUNTIME_DIR=%s: want it masked (exit 0, only \"refused\"), got:\n%s", rt, r)
	}
}
