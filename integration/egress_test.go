//go:build integration

package integration

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator/landlock"
)

// outside is a host beyond the sandbox: a network namespace of this machine, joined to
// the host by a veth pair, serving HTTP on two ports. Nothing outside the machine is
// ever contacted.
type outside struct {
	ns, addr string
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("the egress tests create network namespaces and need root in CI")
		}
		t.Skip("needs root to create network namespaces")
	}
}

// outsideSubnets are the subnets of this suite's outside hosts (newOutside).
var (
	outsideMu      sync.Mutex
	outsideSubnets = map[int]bool{}
)

func newOutside(t *testing.T) *outside {
	t.Helper()
	requireRoot(t)
	var b [2]byte
	var subnet int
	// Two outside hosts on one subnet would answer for each other: skip one in use
	// here (subtests in lanes make theirs at once: outsideSubnets) or by a concurrent
	// run on this machine.
	outsideMu.Lock()
	for {
		_, _ = rand.Read(b[:])
		subnet = 1 + int(b[0])%250
		if outsideSubnets[subnet] {
			continue
		}
		out, err := exec.Command("ip", "-o", "addr", "show", "to", fmt.Sprintf("10.231.%d.0/30", subnet)).Output()
		if err != nil || len(out) == 0 { // an error fails the setup below
			break
		}
	}
	outsideSubnets[subnet] = true
	outsideMu.Unlock()
	t.Cleanup(func() {
		outsideMu.Lock()
		delete(outsideSubnets, subnet)
		outsideMu.Unlock()
	})
	id := hex.EncodeToString(b[:])
	o := &outside{ns: "dsbit-" + id, addr: fmt.Sprintf("10.231.%d.2", subnet)}
	hostSide, nsSide := "dsbh"+id, "dsbn"+id
	sh := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	sh("ip", "netns", "add", o.ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", o.ns).Run() })
	sh("ip", "link", "add", hostSide, "type", "veth", "peer", "name", nsSide)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", hostSide).Run() })
	sh("ip", "link", "set", nsSide, "netns", o.ns)
	sh("ip", "addr", "add", fmt.Sprintf("10.231.%d.1/30", subnet), "dev", hostSide)
	sh("ip", "link", "set", hostSide, "up")
	sh("ip", "netns", "exec", o.ns, "ip", "addr", "add", o.addr+"/30", "dev", nsSide)
	sh("ip", "netns", "exec", o.ns, "ip", "link", "set", nsSide, "up")
	sh("ip", "netns", "exec", o.ns, "ip", "link", "set", "lo", "up")
	sh("ip", "netns", "exec", o.ns, "ip", "route", "add", "default", "via", fmt.Sprintf("10.231.%d.1", subnet))
	www := t.TempDir()
	if err := os.WriteFile(filepath.Join(www, "index.html"), []byte("OUTSIDE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, port := range []string{"8080", "8081"} {
		cmd := exec.Command("ip", "netns", "exec", o.ns, "busybox", "httpd", "-f", "-p", o.addr+":"+port, "-h", www)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	// Ready when the host can fetch from both ports.
	for _, port := range []string{"8080", "8081"} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", o.addr+":"+port, time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("outside host %s:%s not serving: %v", o.addr, port, err)
			}
			runtimeYield()
		}
	}
	return o
}

// runtimeYield gives a starting server a moment without sleeping a fixed time.
func runtimeYield() { _ = unix.Nanosleep(&unix.Timespec{Nsec: 20e6}, nil) }

// hostService listens on every host address and on an abstract Unix socket, answering
// HOSTSVC: the host's own services a sandbox must not reach.
type hostService struct {
	port     int
	abstract string
	addrs    []string
}

func newHostService(t *testing.T) *hostService {
	t.Helper()
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	hs := &hostService{port: ln.Addr().(*net.TCPAddr).Port, abstract: "dsb-it-" + hex.EncodeToString(b[:])}
	un, err := net.Listen("unix", "@"+hs.abstract)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []net.Listener{ln, un} {
		l := l
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					if _, isTCP := c.(*net.TCPConn); isTCP {
						// Read the request first: closing with unread data resets the connection.
						br := bufio.NewReader(c)
						for {
							line, err := br.ReadString('\n')
							if err != nil || strings.TrimSpace(line) == "" {
								break
							}
						}
					}
					fmt.Fprint(c, "HTTP/1.0 200 OK\r\n\r\nHOSTSVC\n")
				}()
			}
		}()
	}
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range ifaddrs {
		// Veths of other test namespaces (10.231.0.0/16) come and go with other
		// tests; the host's own addresses are what matters here.
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !(ip.IP.To4()[0] == 10 && ip.IP.To4()[1] == 231) {
			hs.addrs = append(hs.addrs, ip.IP.String())
		}
	}
	return hs
}

// probeScript prints one line per target: NAME ok|no. curl --noproxy '*' goes direct.
func probeScript(o *outside, hs *hostService) string {
	var b strings.Builder
	try := func(name, cmd string) {
		fmt.Fprintf(&b, "if %s >/dev/null 2>&1; then echo '%s ok'; else echo '%s no'; fi\n", cmd, name, name)
	}
	try("outside:8080", fmt.Sprintf("curl -sf --noproxy '*' -m 3 http://%s:8080/", o.addr))
	try("outside:8081", fmt.Sprintf("curl -sf --noproxy '*' -m 3 http://%s:8081/", o.addr))
	for _, a := range hs.addrs {
		try("host "+a, fmt.Sprintf("curl -sf --noproxy '*' -m 3 http://%s:%d/", a, hs.port))
	}
	try("abstract", fmt.Sprintf(`python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect('\0%s'); assert b'HOSTSVC' in s.recv(64)"`, hs.abstract))
	try("proxy-outside", fmt.Sprintf("curl -sf -m 3 http://%s:8080/", o.addr))
	return b.String()
}

func parseProbe(t *testing.T, out string) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		got[strings.Join(f[:len(f)-1], " ")] = f[len(f)-1] == "ok"
	}
	return got
}

// TestEgressReachability checks, per isolator and mode, exactly what a sandboxed
// process reaches.
func TestEgressReachability(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	hs := newHostService(t)
	forEachIsolatorOf(t, withRootless(withTCP(isolators())), func(t *testing.T, iso string) { testEgressReachability(t, iso, o, hs) })
}

func testEgressReachability(t *testing.T, iso string, o *outside, hs *hostService) {
	p := newProject(t)
	hostAll := func(ok bool) map[string]bool {
		m := map[string]bool{"abstract": false}
		for _, a := range hs.addrs {
			m["host "+a] = ok
		}
		return m
	}
	tests := []struct {
		name  string
		flags []string
		want  map[string]bool
	}{
		{"none", []string{"--egress=none"}, merge(hostAll(false), map[string]bool{
			"outside:8080": false, "outside:8081": false, "proxy-outside": false})},
		{"proxy, private outside host refused", []string{"--egress=proxy"}, merge(hostAll(false), map[string]bool{
			"outside:8080": false, "outside:8081": false, "proxy-outside": false})},
		{"proxy, outside host allowed", []string{"--egress=proxy", "--allow", o.addr + ":8080"}, merge(hostAll(false), map[string]bool{
			"outside:8080": false, "outside:8081": false, "proxy-outside": true})},
		{"allowlist", []string{"--egress=allowlist", "--allow", o.addr + ":8080"}, merge(hostAll(false), map[string]bool{
			"outside:8080": true, "outside:8081": false, "proxy-outside": true})},
		{"open", []string{"--egress=open"}, merge(hostAll(true), map[string]bool{
			"outside:8080": true, "outside:8081": true, "proxy-outside": true})},
	}
	script := probeScript(o, hs)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := p.sandbox(iso, tt.flags, script)
			if r.code != 0 {
				t.Fatalf("probe failed:\n%s", r)
			}
			got := parseProbe(t, r.stdout)
			switch {
			case tt.name == "open" && iso == "bwrap":
				// The abstract socket is in the host's network namespace, which
				// bwrap's open mode shares: reachable there unless the kernel has
				// Landlock scopes (Linux 6.12), which the init then applies
				// (TestOpenEgressHostAbstractSocketsUnreachable).
				tt.want["abstract"] = landlock.ABI() < landlock.ScopeABI
			case tt.name == "open":
				// A container's open mode is a network of its own: its loopback is
				// not the host's.
				for _, a := range hs.addrs {
					if net.ParseIP(a).IsLoopback() {
						tt.want["host "+a] = false
					}
				}
				if iso == rootlessDocker {
					// A rootless engine's bridge is in rootlesskit's network
					// namespace, with Docker's default address, which is this
					// host's docker0's too: there it is the engine's own gateway,
					// where nothing of the host's listens.
					gw := dockerAt(t, iso, "network", "inspect", "bridge", "--format", "{{range .IPAM.Config}}{{.Gateway}}{{end}}")
					if _, ok := tt.want["host "+gw]; ok {
						tt.want["host "+gw] = false
					}
				}
			}
			for k, want := range tt.want {
				if got[k] != want {
					t.Errorf("%s: reachable %v, want %v\n%s", k, got[k], want, r.stdout)
				}
			}
		})
	}
}

func merge(a, b map[string]bool) map[string]bool {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// TestEgressRulesUnchangeable: in allowlist mode the firewall cannot be flushed from
// inside, and a broken firewall aborts the run before the command starts.
func TestEgressFirewallGuarantees(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	forEachIsolatorOf(t, withRootless(isolators()), func(t *testing.T, iso string) { testEgressFirewallGuarantees(t, iso, o) })
}

func testEgressFirewallGuarantees(t *testing.T, iso string, o *outside) {
	p := newProject(t)
	r := p.sandbox(iso, []string{"--egress=allowlist", "--allow", o.addr + ":8080"},
		`nft flush ruleset 2>/dev/null && echo FLUSHED; iptables -F 2>/dev/null && echo IPT-FLUSHED; curl -sf --noproxy '*' -m 3 http://`+o.addr+`:8081/ >/dev/null && echo REACHED; echo done`)
	if r.code != 0 || r.stdout != "done\n" {
		t.Fatalf("rules changed or bypassed from inside:\n%s", r)
	}
	// A refused connection fails at once (the rules reject it), instead of hanging
	// until the client gives up: curl's 7 is "could not connect", 28 a timeout.
	r = p.sandbox(iso, []string{"--egress=allowlist", "--allow", o.addr + ":8080"},
		`curl -s --noproxy '*' -m 20 http://`+o.addr+`:8081/ >/dev/null; echo "rc=$?"`)
	if r.code != 0 || r.stdout != "rc=7\n" {
		t.Fatalf("a refused connection did not fail at once:\n%s", r)
	}
	marker := p.path("proj/started")
	broken := run(t, p.dir, []string{"DEVSANDBOX_NFT=/bin/false", "DEVSANDBOX_IPTABLES=/nonexistent/iptables"}, "",
		"--isolator="+iso, "--egress=allowlist", "--allow", o.addr+":8080", "--", "/bin/sh", "-c", "touch "+marker)
	if broken.code != 125 || !strings.Contains(broken.stderr, "egress rules could not be applied") {
		t.Fatalf("a broken firewall did not abort with 125:\n%s", broken)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the command ran although the firewall failed: %v", err)
	}
}

// TestEgressKill9 takes pasta, devsandbox-proxy and the sandbox (for docker: the
// container) down with devsandbox.
func TestEgressKill9(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	forEachIsolator(t, func(t *testing.T, iso string) { testEgressKill9(t, iso, o) })
}

func testEgressKill9(t *testing.T, iso string, o *outside) {
	for _, mode := range []string{"proxy", "allowlist"} {
		t.Run(mode, func(t *testing.T) {
			p := newProject(t)
			// The proxy starts on the sandbox's first connection to it: the script makes one.
			cmd := command(t.Context(), p.dir, baseEnv(), "--isolator="+iso, "--egress="+mode, "--allow", o.addr+":8080",
				"--", "/bin/sh", "-c", fmt.Sprintf(`curl -s -o /dev/null -m 5 -x "$HTTPS_PROXY" http://%s:8080/; sleep 1000 & echo ready; wait`, o.addr))
			startLines(t, cmd).waitFor("ready")
			if isDocker(iso) {
				testDockerKill9(t, iso, p, cmd)
				return
			}
			isProxy := func(pid int) bool { return program(pid) == "devsandbox-proxy" }
			tree := descendants(cmd.Process.Pid)
			for deadline := time.Now().Add(5 * time.Second); !slices.ContainsFunc(tree, isProxy) && time.Now().Before(deadline); {
				runtimeYield()
				tree = descendants(cmd.Process.Pid)
			}
			var fds, service []int
			names := map[int]string{} // by pidfd
			// krun's podman service (its supervisor and podman) is shared by every
			// run of the user and ends ServiceIdle (10 s) after its last user, by
			// design: it is held to that, not to the run's 10 s.
			inService := map[int]bool{}
			for _, pid := range tree {
				if isServiceSupervisor(pid) {
					for _, d := range append(descendants(pid), pid) {
						inService[d] = true
					}
				}
			}
			for _, pid := range tree {
				if fd, err := unix.PidfdOpen(pid, 0); err == nil {
					if inService[pid] {
						service = append(service, fd)
					} else {
						fds = append(fds, fd)
					}
					names[fd] = fmt.Sprintf("%s (pid %d)", program(pid), pid)
				}
			}
			if iso == "bwrap" && len(fds) < 3 {
				t.Fatalf("only %d descendants", len(fds))
			}
			if !slices.ContainsFunc(tree, isProxy) {
				t.Fatalf("no devsandbox-proxy among the descendants of devsandbox: %v", slices.Collect(maps.Values(names)))
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			deadline := time.Now().Add(10 * time.Second)
			for _, fd := range fds {
				if err := pidfdExited(fd, deadline); err != nil {
					t.Errorf("%s outlived devsandbox: %v", names[fd], err)
				}
				unix.Close(fd)
			}
			serviceDeadline := time.Now().Add(25 * time.Second)
			for _, fd := range service {
				if err := pidfdExited(fd, serviceDeadline); err != nil && !serviceInUse(t, suiteServiceSocket()) {
					t.Errorf("%s of the podman service outlived devsandbox by 25s with no devsandbox using it: %v", names[fd], err)
				}
				unix.Close(fd)
			}
		})
	}
}

// isServiceSupervisor reports whether pid is krun's podman service supervisor
// (`devsandbox-krun supervise …`).
func isServiceSupervisor(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	argv := strings.Split(string(b), "\x00")
	return len(argv) > 1 && filepath.Base(argv[0]) == "devsandbox-krun" && argv[1] == "supervise"
}

// testDockerKill9: the proxy runs in the engine, in the session's companion; kill -9
// of devsandbox takes the sandbox, the companion and the session's endpoint volume
// down with it (the project's content and anchor volumes stay, as after any run).
func testDockerKill9(t *testing.T, iso string, p *project, cmd *exec.Cmd) {
	if c := roleContainers(t, iso, p, false, "companion"); len(c) != 1 {
		t.Fatalf("want the session's companion, have %v", c)
	}
	if v := projectVolumes(t, iso, p); len(v) == 0 {
		t.Fatal("no endpoint volume")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, h, v := projectContainers(t, iso, p, true), roleContainers(t, iso, p, true, "companion"), sessionVolumes(t, iso, p)
		if len(c)+len(h)+len(v) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left in the engine 10s after kill -9 of devsandbox: containers %v, companions %v, volumes %v", c, h, v)
		}
		runtimeYield()
	}
}

// program is the base name of the program pid runs (argv[0]), or "" once it is gone.
func program(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return ""
	}
	argv0, _, _ := strings.Cut(string(b), "\x00")
	return filepath.Base(argv0)
}

// TestProxyAuditLogFlushed: when a run ends, devsandbox-proxy has written every
// request of the run to the audit log, so `devsandbox logs proxy` shows them at once.
func TestProxyAuditLogFlushed(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	forEachIsolator(t, func(t *testing.T, iso string) { testProxyAuditLogFlushed(t, iso, o) })
}

func testProxyAuditLogFlushed(t *testing.T, iso string, o *outside) {
	p := newProject(t)
	script := fmt.Sprintf(`curl -s -o /dev/null -w '%%{http_code}\n' -m 5 http://%[1]s:8080/index.html
		curl -s -o /dev/null -w '%%{http_code}\n' -m 5 http://%[1]s:8081/`, o.addr)
	if out := p.mustSandbox(iso, []string{"--egress=proxy", "--allow", o.addr + ":8080"}, script); out != "200\n403\n" {
		t.Fatalf("statuses through the proxy: %q, want 200 then 403", out)
	}
	r := run(t, p.dir, nil, "", "logs", "proxy", "--json")
	if r.code != 0 {
		t.Fatalf("devsandbox logs proxy:\n%s", r)
	}
	var got []string
	sessions := map[string]bool{}
	for line := range strings.Lines(r.stdout) {
		var rec struct {
			Session, Method, Host, Path, Decision, Rule string
			Port, Status                                int
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%v in %q", err, line)
		}
		sessions[rec.Session] = true
		got = append(got, fmt.Sprintf("%s %s %s:%d%s %d %s", rec.Decision, rec.Method, rec.Host, rec.Port, rec.Path, rec.Status, rec.Rule))
	}
	want := []string{
		fmt.Sprintf("allow GET %s:8080/index.html 200 %s:8080", o.addr, o.addr),
		fmt.Sprintf("deny GET %s:8081/ 403 private address", o.addr),
	}
	if !slices.Equal(got, want) || len(sessions) != 1 || sessions[""] {
		t.Errorf("audit log after the run:\n%s\nwant\n%s\n(sessions %v)", strings.Join(got, "\n"), strings.Join(want, "\n"), sessions)
	}
}

// TestSSHThroughProxy: in proxy mode ssh's generated config tunnels through the proxy
// (CONNECT) with the init as ProxyCommand; the tunnel reaches an allowed host and a
// denied one is refused with the proxy's reason.
func TestSSHThroughProxy(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	forEachIsolator(t, func(t *testing.T, iso string) { testSSHThroughProxy(t, iso, o) })
}

func testSSHThroughProxy(t *testing.T, iso string, o *outside) {
	p := newProject(t)
	// ssh reads ~/.ssh/config from the passwd entry's home, not $HOME. The containers'
	// passwd names docker.home; under bwrap it is the host's, the test user's own home,
	// which is not the suite's HOME (the throwaway one): name the file there.
	config := ""
	if iso == "bwrap" {
		config = ` -F "$HOME/.ssh/config"`
	}
	script := fmt.Sprintf(`
		ssh -G`+config+` example.test 2>/dev/null | grep -i '^proxycommand'
		printf 'GET / HTTP/1.0\r\n\r\n' | /run/devsandbox/init --connect=127.0.0.1:3128 %[1]s 8080 | tail -1
		/run/devsandbox/init --connect=127.0.0.1:3128 %[1]s 8081 </dev/null 2>&1 | head -1`, o.addr)
	out := p.mustSandbox(iso, []string{"--egress=proxy", "--allow", o.addr + ":8080"}, script)
	want := "proxycommand /run/devsandbox/init --connect=127.0.0.1:3128 %h %p\nOUTSIDE\n"
	if !strings.HasPrefix(out, want) || !strings.Contains(out, "refused "+o.addr+":8081: 403") {
		t.Fatalf("ssh through the proxy:\n%s", out)
	}
}

// TestProxyListenerHeldOutside: under bwrap the proxy serves the sandbox's
// 127.0.0.1:3128 itself. The listening socket the init made there is held by no process
// in the sandbox (a process there could otherwise take it over, or hand it on), yet
// the proxy answers on it: a request for the host's loopback is refused with its 403.
// No other way to the proxy is left in the sandbox: its Unix socket is not bound in.
func TestProxyListenerHeldOutside(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	script := `inode=$(awk '$2 ~ /:0C38$/ && $4 == "0A" {print $10}' /proc/net/tcp)
		echo "listener ${inode:-none}"
		for f in /proc/[0-9]*/fd/*; do
			[ "$(readlink "$f" 2>/dev/null)" = "socket:[$inode]" ] && echo "held-by $f"
		done
		curl -s --noproxy '' -o /dev/null -w 'status %{http_code}\n' -m 5 -x http://127.0.0.1:3128 http://127.0.0.1:9/
		find /run 2>/dev/null | while read -r f; do [ -S "$f" ] && echo "unix socket $f"; done; true`
	out := p.mustSandbox("bwrap", []string{"--egress=proxy"}, script)
	if strings.Contains(out, "listener none") || !strings.Contains(out, "listener ") {
		t.Fatalf("no socket listens on 127.0.0.1:3128 in the sandbox:\n%s", out)
	}
	if strings.Contains(out, "held-by ") {
		t.Errorf("a process in the sandbox holds the proxy's listening socket:\n%s", out)
	}
	if !strings.Contains(out, "status 403\n") {
		t.Errorf("the proxy did not answer on 127.0.0.1:3128:\n%s", out)
	}
	if strings.Contains(out, "unix socket ") {
		t.Errorf("the proxy's Unix socket is within the sandbox's reach:\n%s", out)
	}
}
