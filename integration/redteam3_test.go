//go:build integration

package integration

import (
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator/landlock"
)

// TestOpenEgressHostAbstractSocketsUnreachable: under --egress=open a bwrap sandbox
// shares the host's network namespace (--share-net), and abstract Unix sockets belong
// to a network namespace, not to the file system: no mount, mask or hide_paths reaches
// them. On s27 a sandboxed command connected to a host process's abstract socket and
// got its answer; on a desktop that is the X server (`@/tmp/.X11-unix/X0`, which Xorg
// and Xwayland listen on and which GNOME opens to the user's own uid without a cookie:
// keystrokes typed into the user's terminal) or a D-Bus bus at an abstract address
// (`systemd-run --user` runs anything). The init now starts the command in a Landlock
// domain scoped to its own abstract sockets (Linux 6.12): the host's refuse it
// (EPERM), the sandbox's own still work.
func TestOpenEgressHostAbstractSocketsUnreachable(t *testing.T) {
	requireBwrap(t)
	if abi := landlock.ABI(); abi < landlock.ScopeABI {
		// Without Landlock scopes (Linux 6.12) the host's abstract sockets stay
		// reachable under open (documented).
		if os.Getenv("CI") != "" {
			t.Fatalf("CI needs a kernel with Landlock scopes (ABI 6, Linux 6.12): ABI %d", abi)
		}
		t.Skipf("no Landlock scopes on this kernel (ABI %d)", abi)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("dsb-abstract-%x", b)
	// Abstract sockets have no owner or mode: any process of the namespace may connect.
	ln, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprint(c, "HOST-ABSTRACT-ANSWERED\n")
			c.Close()
		}
	}()
	script := unixConnectScript(`\0`+name) + `; python3 -c "
import socket
l = socket.socket(socket.AF_UNIX); l.bind('\0own-` + name + `'); l.listen(1)
c = socket.socket(socket.AF_UNIX); c.connect('\0own-` + name + `')
print('own ok')
"`
	p := newProject(t)
	r := run(t, p.dir, nil, "", "--isolator=bwrap", "--egress=open", "--", "/bin/sh", "-c", script)
	if r.code != 0 || r.stdout != "refused\nown ok\n" {
		t.Fatalf("under --egress=open: want the host's abstract socket @%s refused and the sandbox's own working (exit 0, \"refused\", \"own ok\"), got:\n%s", name, r)
	}
}

// TestHuskyHookScriptsReadOnly: husky 9 sets core.hooksPath to .husky/_; each hook
// there sources husky's `h`, which runs .husky/<hook> (one level up) on the host at
// every commit. The hooks directory was read-only, the scripts it runs were not: on
// s27 the sandbox appended to .husky/pre-commit and created .husky/post-commit, and
// the host's next `git commit` ran them. Now .husky is read-only; the rest of the
// project stays writable.
func TestHuskyHookScriptsReadOnly(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("proj/.git/config", "[core]\n\trepositoryformatversion = 0\n\thooksPath = .husky/_\n")
		p.write("proj/.husky/_/h", "#!/usr/bin/env sh\nn=$(basename \"$0\")\ns=$(dirname \"$(dirname \"$0\")\")/$n\n[ ! -f \"$s\" ] && exit 0\nsh -e \"$s\" \"$@\"\n")
		p.write("proj/.husky/_/pre-commit", "#!/usr/bin/env sh\n. \"$(dirname \"$0\")/h\"\n")
		const hook = "npx lint-staged\n"
		p.write("proj/.husky/pre-commit", hook)
		r := p.sandbox(iso, nil, `echo 'echo HOOK-RAN-ON-HOST' >> .husky/pre-commit 2>/dev/null && echo WROTE pre-commit
echo 'echo HOOK-RAN-ON-HOST' > .husky/post-commit 2>/dev/null && echo WROTE post-commit
echo x > a && echo project writable`)
		if r.code != 0 || strings.Contains(r.stdout, "WROTE") || !strings.Contains(r.stdout, "project writable") {
			t.Errorf("husky's hook scripts, which the host's git runs at each commit: want them read-only and the project writable, got:\n%s", r)
		}
		if b, err := os.ReadFile(p.path("proj/.husky/pre-commit")); err != nil || string(b) != hook {
			t.Errorf(".husky/pre-commit on the host: %q, %v", b, err)
		}
		if _, err := os.Lstat(p.path("proj/.husky/post-commit")); err == nil {
			t.Errorf(".husky/post-commit was created on the host")
		}
	})
}
