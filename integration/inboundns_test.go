//go:build integration

package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// inboundAnyListener listens on every address of the sandbox, prints "port" and its
// port, then "ready", then serves whoever connects with a line of the sandbox's data
// until stdin ends. (inboundListener also names eth0's address, which a krun guest's
// interface is not called.)
const inboundAnyListener = `
import select, socket, sys
l = socket.socket()
l.bind(("0.0.0.0", 0))
l.listen(4)
print("port", l.getsockname()[1], flush=True)
print("ready", flush=True)
while True:
    r, _, _ = select.select([l, sys.stdin], [], [])
    if sys.stdin in r:
        break
    c, peer = l.accept()
    c.sendall(b"SANDBOX-DATA\n")
    c.close()
`

// inboundClient connects to argv[1]:argv[2] and prints what it reads, or why not.
const inboundClient = `
import socket, sys
try:
    c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3)
    c.settimeout(3)
    print("read", c.recv(64).decode().strip())
except OSError as e:
    print("refused", type(e).__name__)
`

// TestEgressFirewallRefusesInboundNamespace: under a firewall (egress allowlist) the
// input chain of the sandbox's own network namespace (bwrap's, made by pasta; krun's)
// lets in only replies and loopback. Nothing on this host reaches those namespaces by
// itself (pasta forwards no port in), so the test makes a way in: a veth pair from a
// test namespace of its own into the sandbox's (entered by the listener's pid, as
// root). A connection from there must be refused; the same connection once the test
// opens the input chain (nft, in the sandbox's namespace) must reach the listener,
// which shows that the way in works and the chain alone refused it.
func TestEgressFirewallRefusesInboundNamespace(t *testing.T) {
	requireRoot(t)
	isos := slices.DeleteFunc(slices.Clone(isolators()), func(iso string) bool { return iso != "bwrap" && iso != "krun" })
	if len(isos) == 0 {
		t.Skip("for bwrap and krun: add one to DEVSANDBOX_IT_ISOLATORS")
	}
	forEachIsolatorOf(t, isos, func(t *testing.T, iso string) {
		p := newProject(t)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		token := "dsb-inbound-" + randHex(6)
		cmd := command(ctx, p.dir, baseEnv(), "--isolator="+iso, "--egress=allowlist", "--allow", "192.0.2.1:443",
			"--", "python3", "-c", inboundAnyListener, token)
		lr, release := started(t, cmd)
		defer release()
		fields := strings.Fields(lr.next())
		if len(fields) != 2 || fields[0] != "port" {
			t.Fatalf("the listener did not say its port: %q", fields)
		}
		if l := lr.next(); l != "ready" {
			t.Fatalf("the listener did not start: %q", l)
		}
		port := fields[1]
		pid := pythonWith(t, token)

		var b [2]byte
		_, _ = rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		ns, inSide, outSide := "dsbin-"+id, "dsbi"+id, "dsbo"+id
		subnet := 1 + int(b[0])%250
		sandboxAddr, testAddr := fmt.Sprintf("10.231.%d.1", subnet), fmt.Sprintf("10.231.%d.2", subnet)
		sh := func(args ...string) string {
			t.Helper()
			out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
			return string(out)
		}
		inSandbox := func(args ...string) string {
			t.Helper()
			return sh(append([]string{"nsenter", "-t", pid, "-n", "--"}, args...)...)
		}
		sh("ip", "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		inSandbox("ip", "link", "add", inSide, "type", "veth", "peer", "name", outSide, "netns", ns)
		inSandbox("ip", "addr", "add", sandboxAddr+"/30", "dev", inSide)
		inSandbox("ip", "link", "set", inSide, "up")
		sh("ip", "netns", "exec", ns, "ip", "addr", "add", testAddr+"/30", "dev", outSide)
		sh("ip", "netns", "exec", ns, "ip", "link", "set", outSide, "up")
		connect := func() string {
			return strings.TrimSpace(sh("ip", "netns", "exec", ns, "python3", "-c", inboundClient, sandboxAddr, port))
		}
		if got := connect(); !strings.HasPrefix(got, "refused") {
			t.Errorf("%s: a test namespace on a veth into the sandbox's network namespace connected to the listener under --egress=allowlist: %q; the input chain lets connections in", iso, got)
		}
		// The control: the input chain opened, the same connection gets in.
		inSandbox("nft", "insert", "rule", "inet", "devsandbox", "input", "accept")
		if got := connect(); got != "read SANDBOX-DATA" {
			t.Fatalf("%s: with the input chain opened, the connection from the test namespace: %q, want \"read SANDBOX-DATA\" (the way in does not work, so the refusal above shows nothing)", iso, got)
		}
	})
}

// pythonWith returns the pid of the python3 process whose arguments hold token (one
// that has said it is ready, so it is there).
func pythonWith(t *testing.T, token string) string {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 0 && filepath.Base(args[0]) == "python3" && slices.Contains(args, token) {
			return filepath.Base(d)
		}
	}
	t.Fatalf("no python3 process holds %s", token)
	return ""
}
