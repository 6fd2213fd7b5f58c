//go:build integration

package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// unixConnectScript prints what a connection to sock answers, or "refused".
func unixConnectScript(sock string) string {
	return fmt.Sprintf(`python3 -c "
import socket
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
try:
    s.connect('%s')
    print(s.recv(64).decode().strip())
except OSError as e:
    print('refused')
"`, sock)
}

// answerOn listens at sock, mode 0666 (a service open to every user), and answers
// each connection with answer and a newline until the test ends.
func answerOn(t *testing.T, sock, answer string) {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprint(c, answer+"\n")
			c.Close()
		}
	}()
}

// serviceSocket starts a listener at a fresh directory under parent, mode 0755, whose
// socket (mode 0666, as a service open to every user) answers answer.
func serviceSocket(t *testing.T, parent, answer string) (dir, sock string) {
	t.Helper()
	dir, err := os.MkdirTemp(parent, "dsb-hostsock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock = filepath.Join(dir, "x.sock")
	answerOn(t, sock, answer)
	return dir, sock
}

// TestHostViewServiceSocketMasked: a service's socket outside /run (here under
// /var/lib, like MySQL's, a snap's, a VM manager's) is masked wherever a view beyond
// the minimal one shows it: the host view, a bind of its directory, a bind of that
// directory elsewhere. A read-only mount does not stop connect(2): on main a
// host-view sandbox got the service's answer. A bind naming the socket itself shares
// it (the way to opt in).
func TestHostViewServiceSocketMasked(t *testing.T) {
	requireBwrap(t)
	dir, sock := serviceSocket(t, "/var/lib", "SERVICE-ANSWERED")
	moved := "/mnt/" + filepath.Base(dir)
	for _, tc := range []struct {
		name, config, path, want string
	}{
		{"host view", "system_binds = [\"host\"]\n", sock, "refused"},
		{"ro_binds of its directory", fmt.Sprintf("ro_binds = [%q]\n", dir), sock, "refused"},
		{"its directory moved", fmt.Sprintf("host_mounts = [%q]\n", dir+":"+moved), filepath.Join(moved, "x.sock"), "refused"},
		{"ro_binds of the socket", fmt.Sprintf("ro_binds = [%q]\n", sock), sock, "SERVICE-ANSWERED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t)
			cfg := p.writeConfig("bwrap", "view.toml", "[sandbox]\n"+tc.config)
			r := run(t, p.dir, nil, "", "--isolator=bwrap", "--config", cfg, "--egress=none", "--", "/bin/sh", "-c", unixConnectScript(tc.path))
			if r.code != 0 || r.stdout != tc.want+"\n" {
				t.Fatalf("%s: want %q from %s, got:\n%s", tc.config, tc.want, tc.path, r)
			}
		})
	}
}

// TestHostViewAgentSocketMasked: the host's ssh agent socket (SSH_AUTH_SOCK) is masked
// wherever a view shows it, whatever its path; the ssh tool's filtering relay still
// lists the keys. On main, with the agent at /var/tmp/.../agent.sock, a host-view
// sandbox listed (and could have removed, locked or added) the keys through the raw
// socket, past the relay's filter.
func TestHostViewAgentSocketMasked(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("/var/tmp", "dsb-agent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	sock, asUser := hostAgentAt(ctx, t, p, filepath.Join(dir, "agent.sock"))
	addHostKey(t, p, asUser)
	env := []string{"SSH_AUTH_SOCK=" + sock, "XDG_RUNTIME_DIR=" + runtimeDir()}
	script := `ssh-add -l 2>&1 | grep -q HOSTKEY && echo LISTS
		SSH_AUTH_SOCK=` + sock + ` ssh-add -l 2>&1 | grep -q HOSTKEY && echo RAW_LISTS
		true`
	for _, tc := range []struct{ name, config string }{
		{"host view", "system_binds = [\"host\"]\n"},
		{"ro_binds of its directory", fmt.Sprintf("ro_binds = [%q]\n", dir)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := p.writeConfig("bwrap", strings.ReplaceAll(tc.name, " ", "_")+".toml", "[sandbox]\n"+tc.config)
			r := run(t, p.dir, env, "", "--isolator=bwrap", "--config", cfg, "--egress=none", "--", "/bin/sh", "-c", script)
			if r.code != 0 || r.stdout != "LISTS\n" {
				t.Fatalf("%s: want the keys listed through the relay only (\"LISTS\", no \"RAW_LISTS\" through %s), got:\n%s", tc.config, sock, r)
			}
		})
	}
}

// TestSelfInProjectWarns: devsandbox run from a copy inside the project, which the
// sandbox can write, says so in one warning naming the directory and the fix. The
// attack it warns of: the sandboxed command replaces a helper binary beside devsandbox
// (here devsandbox-bwrap-init, which the next launch runs on the host side of the
// sandbox's set-up). On main the launch was silent.
func TestSelfInProjectWarns(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	bin := filepath.Join(p.dir, "tools", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"devsandbox", "devsandbox-init", "devsandbox-bwrap-init", "devsandbox-proxy"} {
		data, err := os.ReadFile(filepath.Join(filepath.Dir(it.bin), name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p.chownUp(filepath.Join(bin, "devsandbox"))
	for _, name := range []string{"devsandbox-init", "devsandbox-bwrap-init", "devsandbox-proxy"} {
		p.chownUp(filepath.Join(bin, name))
	}
	r := runBin(t, filepath.Join(bin, "devsandbox"), p.dir, nil, "", "--isolator=bwrap", "--egress=none", "--", "/bin/sh", "-c",
		`cp tools/bin/devsandbox-bwrap-init /tmp/i && mv /tmp/i tools/bin/devsandbox-bwrap-init.new && mv tools/bin/devsandbox-bwrap-init.new tools/bin/devsandbox-bwrap-init && echo REPLACED`)
	if r.code != 0 || r.stdout != "REPLACED\n" {
		t.Fatalf("the sandbox could not replace a helper in the project (the test proves nothing):\n%s", r)
	}
	want := "devsandbox runs from " + bin + ", which this sandbox can write"
	if n := strings.Count(r.stderr, want); n != 1 || !strings.Contains(r.stderr, "install devsandbox outside the project") {
		t.Fatalf("want one warning %q naming the fix, got:\n%s", want, r)
	}
}
