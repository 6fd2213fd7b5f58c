//go:build integration

package integration

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSSHAgentPath: which way the ssh agent reaches a docker container, and that
// neither way can be turned against the host. The local engine binds the session
// relay's socket read-only, proved by the init before the command starts (--debug
// says "agent bound"); the stand-in cannot see /run/user/..., refuses that bind, and
// gets the agent through the Engine API stream ("agent stream"). A kept container
// whose relays' directory was removed (housekeeping makes a new one) falls back to
// the stream in its next session. Through the bound path the sandbox can neither
// plant anything in the host's directory of relays (write, link, fifo, directory),
// nor replace the socket, nor get past the filter.
func TestSSHAgentPath(t *testing.T) {
	forEachDocker(t, sshAgentPath)
}

// agentPathScript is what each session runs: the agent works, and every attempt on
// the socket's path and its directory says whether it succeeded.
const agentPathScript = `
	d=$(dirname "$SSH_AUTH_SOCK")
	ssh-add -l | grep -q HOSTKEY && echo LISTS
	ssh-add -D </dev/null >/dev/null 2>&1 && echo REMOVED_ALL
	ssh-add -d "$PWD/hostkey.pub" </dev/null >/dev/null 2>&1 && echo REMOVED_ONE
	rm -f "$SSH_AUTH_SOCK" 2>/dev/null && test ! -S "$SSH_AUTH_SOCK" && echo REPLACED
	mv "$SSH_AUTH_SOCK" /tmp/moved 2>/dev/null && echo REPLACED
	touch "$d/planted" 2>/dev/null && echo PLANTED
	ln -s / "$d/planted-link" 2>/dev/null && echo PLANTED
	ln "$SSH_AUTH_SOCK" "$d/planted-hard" 2>/dev/null && echo PLANTED
	mkfifo "$d/planted-fifo" 2>/dev/null && echo PLANTED
	mkdir "$d/planted-dir" 2>/dev/null && echo PLANTED
	ssh-add -l | grep -q HOSTKEY && echo STILL_LISTS
	true`

func sshAgentPath(t *testing.T, iso string) {
	p := newProject(t)
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	sock, asUser := hostAgent(ctx, t, p)
	key := p.path("agent/hostkey")
	if out, err := asUser("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "HOSTKEY", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	if out, err := asUser("ssh-add", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	p.write("proj/hostkey.pub", string(pub))
	p.chownUp(p.path("proj/hostkey.pub"))
	before, err := asUser("ssh-add", "-L").Output()
	if err != nil {
		t.Fatalf("ssh-add -L: %v", err)
	}
	sockDir := filepath.Join(runtimeDir(), "devsandbox", strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-"))
	env := []string{"SSH_AUTH_SOCK=" + sock, "XDG_RUNTIME_DIR=" + runtimeDir()}
	want := "agent bound"
	if iso != localDocker {
		want = "agent stream" // the stand-in cannot see /run/user/...
	}
	session := func(what, want string, flags ...string) {
		t.Helper()
		args := append([]string{"--isolator=" + iso, "--debug", "--egress=none"}, flags...)
		r := run(t, p.dir, env, "", append(args, "--", "/bin/sh", "-c", agentPathScript)...)
		if r.code != 0 || r.stdout != "LISTS\nSTILL_LISTS\n" {
			t.Errorf("%s: want the keys listed, none removed, the socket neither replaced nor anything planted beside it:\n%s", what, r)
		}
		if !strings.Contains(r.stderr, want+" ") {
			t.Errorf("%s: the agent did not take the expected path (%q in the --debug timings):\n%s", what, want, r)
		}
		// The host's directory of relays holds only relays' sockets (and the kept
		// sessions' directory), nothing the sandbox made.
		_ = filepath.WalkDir(filepath.Join(sockDir, "agent"), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if strings.Contains(d.Name(), "planted") || (d.Type() != fs.ModeSocket && !d.IsDir()) {
				t.Errorf("%s: the sandbox left %s (%v) in the host's directory of agent relays", what, path, d.Type())
			}
			return nil
		})
		if after, err := asUser("ssh-add", "-L").Output(); err != nil || string(after) != string(before) {
			t.Errorf("%s: the host agent's keys changed: before\n%safter (%v)\n%s", what, before, err, after)
		}
	}
	session("one-shot", want)
	session("kept, first session", want, "--keep-container")
	session("kept, second session", want, "--keep-container")
	// The kept container binds the relays' directory it was made with: one made
	// anew (after housekeeping removed the socket directory) is not the one it
	// sees, so the proof fails and the session takes the stream.
	if err := os.RemoveAll(sockDir); err != nil {
		t.Fatal(err)
	}
	session("kept, after the socket directory was made anew", "agent stream", "--keep-container")
}
