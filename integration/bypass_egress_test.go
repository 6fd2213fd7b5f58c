//go:build integration

package integration

import (
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

// countingServer accepts connections on addr in the test namespace ns and counts
// them: the host a sandbox must not reach.
func countingServer(t *testing.T, ns, addr string) *atomic.Int64 {
	t.Helper()
	ln := listenIn(t, ns, addr)
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			_, _ = c.Write([]byte("HTTP/1.0 200 OK\r\n\r\nDENIED-HOST\n"))
			c.Close()
		}
	}()
	return &n
}

// proxyProbe is a Python program run inside the sandbox: for each "NAME\tREQUEST" line
// of its argument it sends REQUEST (escapes \r \n \0 decoded) to the sandbox's proxy
// endpoint, directly or through an in-sandbox relay, and prints "NAME STATUS".
const proxyProbe = `
import os, socket, sys, threading
def pump(a, b):
    try:
        for d in iter(lambda: a.recv(4096), b""):
            b.sendall(d)
    except OSError:
        pass
def relay(lst):
    while True:
        c, _ = lst.accept()
        u = socket.create_connection(("127.0.0.1", 3128))
        for a, b in ((c, u), (u, c)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()
lst = socket.socket(); lst.bind(("127.0.0.1", 0)); lst.listen(8)
threading.Thread(target=relay, args=(lst,), daemon=True).start()
for line in sys.argv[1].split("\n"):
    if not line: continue
    name, req = line.split("\t", 1)
    req = req.encode().decode("unicode_escape").encode("latin-1")
    port = lst.getsockname()[1] if name.startswith("relayed") else 3128
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(req)
        status = s.recv(64).split(b"\r\n")[0].decode(errors="replace").split(" ")
        print(name, status[1] if len(status) > 1 else "none")
    except Exception as e:
        print(name, type(e).__name__)
# The relay's threads may still be in a recv: leave without the interpreter's
# shutdown, which aborts (134) when a daemon thread writes to stderr during it.
sys.stdout.flush()
os._exit(0)
`

// Egress past the proxy's name matching: one host written so that the proxy's check
// and its dial read it differently. Reported: a NUL byte in a SOCKS5 host name
// passed Claude Code's suffix check while the resolver stopped at it (Aonan Guan,
// 2026); URL parser differentials (Orange Tsai, "A New Era of SSRF", Black Hat USA
// 2017); IP literals in decimal, hex, octal and IPv4-mapped IPv6. And a relay inside
// the sandbox that forwards CONNECTs to the proxy: anthropics/claude-code#87381
// (a relayed CONNECT reached a host a direct one could not). The proxy allows one
// port of the outside host; a server on another port counts what reaches it.
func TestBypassProxySmuggling(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	denied := countingServer(t, o.ns, o.addr+":8082")
	ip := netip.MustParseAddr(o.addr).As4()
	dec := fmt.Sprint(uint32(ip[0])<<24 | uint32(ip[1])<<16 | uint32(ip[2])<<8 | uint32(ip[3]))
	hex := fmt.Sprintf("0x%02x%02x%02x%02x", ip[0], ip[1], ip[2], ip[3])
	oct := fmt.Sprintf("0%o.0%o.0%o.0%o", ip[0], ip[1], ip[2], ip[3])
	ok, bad := o.addr+":8080", o.addr+":8082"
	requests := []struct{ name, req string }{
		{"allowed", "CONNECT " + ok + " HTTP/1.1\\r\\nHost: " + ok + "\\r\\n\\r\\n"},
		{"relayed-allowed", "CONNECT " + ok + " HTTP/1.1\\r\\nHost: " + ok + "\\r\\n\\r\\n"},
		{"denied", "CONNECT " + bad + " HTTP/1.1\\r\\nHost: " + bad + "\\r\\n\\r\\n"},
		{"relayed-denied", "CONNECT " + bad + " HTTP/1.1\\r\\nHost: " + bad + "\\r\\n\\r\\n"},
		{"decimal", "CONNECT " + dec + ":8082 HTTP/1.1\\r\\n\\r\\n"},
		{"hex", "CONNECT " + hex + ":8082 HTTP/1.1\\r\\n\\r\\n"},
		{"octal", "CONNECT " + oct + ":8082 HTTP/1.1\\r\\n\\r\\n"},
		{"v4-mapped", "CONNECT [::ffff:" + o.addr + "]:8082 HTTP/1.1\\r\\n\\r\\n"},
		{"trailing-dot", "CONNECT " + o.addr + ".:8082 HTTP/1.1\\r\\n\\r\\n"},
		{"nul-byte", "CONNECT " + o.addr + "\\x00.allowed:8082 HTTP/1.1\\r\\n\\r\\n"},
		{"userinfo", "CONNECT " + ok + "@" + bad + " HTTP/1.1\\r\\n\\r\\n"},
		{"host-header", "GET http://" + bad + "/ HTTP/1.1\\r\\nHost: " + ok + "\\r\\n\\r\\n"},
		{"url-userinfo", "GET http://" + ok + "@" + bad + "/ HTTP/1.1\\r\\nHost: " + ok + "\\r\\n\\r\\n"},
		{"origin-form", "GET / HTTP/1.1\\r\\nHost: " + bad + "\\r\\n\\r\\n"},
	}
	var arg strings.Builder
	for _, r := range requests {
		fmt.Fprintf(&arg, "%s\t%s\n", r.name, r.req)
	}
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		cfg := p.writeConfig(iso, "deny.toml", "[proxy]\ndefault = \"deny\"\n")
		r := run(t, p.dir, nil, "", "--isolator="+iso, "--config", cfg, "--egress=proxy", "--allow", ok,
			"--", "python3", "-c", proxyProbe, arg.String())
		if r.code != 0 {
			t.Fatalf("probe:\n%s", r)
		}
		got := probeLines(r.stdout)
		for _, name := range []string{"allowed", "relayed-allowed"} {
			if got[name] != "200" {
				t.Errorf("%s: %q, want 200 (the probe must reach the proxy)\n%s", name, got[name], r.stdout)
			}
		}
		for _, req := range requests[2:] {
			if s := got[req.name]; s == "" || strings.HasPrefix(s, "2") {
				t.Errorf("%s: %q, want a refusal", req.name, s)
			}
		}
	})
	if n := denied.Load(); n != 0 {
		t.Errorf("the denied host received %d connections", n)
	}
}
