//go:build integration

package integration

import (
	"crypto/rand"
	"fmt"
	"net"
	"testing"
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
