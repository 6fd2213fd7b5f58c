//go:build integration

package integration

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

// inboundListener listens on every address of the sandbox, prints the port, its
// eth0 address and "ready", then serves whoever connects with a line of the
// sandbox's data (and says so on stdout) until stdin ends.
const inboundListener = `
import fcntl, select, socket, struct, sys
l = socket.socket()
l.bind(("0.0.0.0", 0))
l.listen(4)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
addr = socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", b"eth0"))[20:24])  # SIOCGIFADDR
print("addr", addr, l.getsockname()[1], flush=True)
print("ready", flush=True)
while True:
    r, _, _ = select.select([l, sys.stdin], [], [])
    if sys.stdin in r:
        break
    c, peer = l.accept()
    c.sendall(b"SANDBOX-DATA\n")
    c.close()
    print("ACCEPTED", peer[0], flush=True)
`

// TestEgressFirewallRefusesInbound: under a firewall (egress allowlist), nothing may
// connect into the sandbox, only replies come in. A docker sandbox sits on the
// engine's bridge, where the engine's host and the other containers can reach its
// address; were its input chain open, any of them could pull data out of a sandbox
// that may connect nowhere, since the output chain accepts the replies of an
// accepted connection (ct state established). The listener inside is the control: it
// serves whoever reaches it.
func TestEgressFirewallRefusesInbound(t *testing.T) {
	requireRoot(t)
	isos := slices.DeleteFunc(slices.Clone(isolators()), func(iso string) bool { return iso != localDocker })
	if len(isos) == 0 {
		t.Skip("only the local docker engine's sandboxes have an address this host reaches: add docker to DEVSANDBOX_IT_ISOLATORS")
	}
	forEachIsolatorOf(t, isos, func(t *testing.T, iso string) {
		p := newProject(t)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		cmd := command(ctx, p.dir, baseEnv(), "--isolator="+iso, "--egress=allowlist", "--allow", "192.0.2.1:443",
			"--", "python3", "-c", inboundListener)
		lr, release := started(t, cmd)
		fields := strings.Fields(lr.next())
		if len(fields) != 3 || fields[0] != "addr" {
			t.Fatalf("the listener did not say its address: %q", fields)
		}
		if l := lr.next(); l != "ready" {
			t.Fatalf("the listener did not start: %q", l)
		}
		target := net.JoinHostPort(fields[1], fields[2])
		c, err := net.DialTimeout("tcp", target, 3*time.Second)
		if err == nil {
			_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
			b := make([]byte, 64)
			n, _ := c.Read(b)
			c.Close()
			t.Errorf("this host connected into the sandbox at %s under --egress=allowlist and read %q: the firewall lets connections in", target, b[:n])
		}
		release()
		var rest []string
		deadline := time.After(60 * time.Second)
	read:
		for {
			select {
			case l, ok := <-lr.lines:
				if !ok {
					break read
				}
				rest = append(rest, l)
			case <-deadline:
				t.Fatalf("the run did not end within 60s after its stdin closed: %q", rest)
			}
		}
		if slices.ContainsFunc(rest, func(l string) bool { return strings.HasPrefix(l, "ACCEPTED") }) {
			t.Errorf("the sandbox accepted a connection from outside: %q", rest)
		}
	})
}
