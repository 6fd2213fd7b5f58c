//go:build integration

package integration

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAllowlistNameToHostAddressRefused: in allowlist mode an allowed name that
// resolves at launch to one of this host's interface addresses (here the host's end
// of the outside host's veth, a private address) or to the metadata address fails the
// launch (125) before the command runs, naming the name, the address and the fix; a
// name of the outside host goes ahead and reaches it. The names come from an
// /etc/hosts bound over the host's in a mount namespace of the test's own (no DNS):
// devsandbox's resolver reads it as the host's.
func TestAllowlistNameToHostAddressRefused(t *testing.T) {
	requireBwrap(t)
	o := newOutside(t)
	hostSide := o.addr[:strings.LastIndexByte(o.addr, '.')] + ".1"
	d := t.TempDir()
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	hosts := filepath.Join(d, "hosts")
	content := "127.0.0.1 localhost\n" + hostSide + " hostside.dsb.test\n" + o.addr + " outside.dsb.test\n169.254.169.254 meta.dsb.test\n"
	if err := os.WriteFile(hosts, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	p := newProject(t)
	binds := map[string]string{"/etc/hosts": hosts}
	for _, tc := range []struct{ name, addr, what string }{
		{"hostside.dsb.test", hostSide, "an address of this host"},
		{"meta.dsb.test", "169.254.169.254", "a cloud metadata address"},
	} {
		r := inMountNS(t, p.dir, binds, "--isolator=bwrap", "--egress=allowlist", "--allow", tc.name+":8080", "--", "echo", "ran")
		want := "egress allowlist: " + tc.name + " resolves to " + tc.addr + ", " + tc.what +
			", which only an IP or CIDR entry opens (a name's addresses are its DNS's choice); add the address as an entry if you mean to reach it"
		if r.code != 125 || strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, want) {
			t.Errorf("--allow %s:8080 with %s at %s: want 125 and %q:\n%s", tc.name, tc.name, tc.addr, want, r)
		}
	}
	r := inMountNS(t, p.dir, binds, "--isolator=bwrap", "--egress=allowlist", "--allow", "outside.dsb.test:8080", "--",
		"curl", "-sf", "--noproxy", "*", "-m", "10", "http://outside.dsb.test:8080/")
	if r.code != 0 || r.stdout != "OUTSIDE\n" {
		t.Errorf("--allow outside.dsb.test:8080 (the outside host): want it reached:\n%s", r)
	}
}

// TestSuggestionKeepsPort80: under proxy.default = "deny", a request to a name's port
// 80 is refused; the 403 and `logs proxy --suggest` both propose name:80, not the bare
// name (every port); pasted, it reaches port 80 of the outside host and its 8080 stays
// refused. The name comes from an /etc/hosts of the test's own, as above.
func TestSuggestionKeepsPort80(t *testing.T) {
	requireBwrap(t)
	o := newOutside(t)
	www := t.TempDir()
	if err := os.WriteFile(filepath.Join(www, "index.html"), []byte("PORT80\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	httpd := exec.Command("ip", "netns", "exec", o.ns, "busybox", "httpd", "-f", "-p", o.addr+":80", "-h", www)
	if err := httpd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = httpd.Process.Kill(); _ = httpd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; runtimeYield() {
		c, err := net.DialTimeout("tcp", o.addr+":80", time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("outside host %s:80 not serving: %v", o.addr, err)
		}
	}
	d := t.TempDir()
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	hosts := filepath.Join(d, "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"+o.addr+" outside.dsb.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	binds := map[string]string{"/etc/hosts": hosts}
	p := newProject(t)
	cfg := p.writeConfig("bwrap", "deny.toml", "[proxy]\ndefault = \"deny\"\n")
	get := func(allow []string, url string) result {
		t.Helper()
		args := []string{"--isolator=bwrap", "--config=" + cfg, "--egress=proxy"}
		for _, a := range allow {
			args = append(args, "--allow", a)
		}
		return inMountNS(t, p.dir, binds, append(args, "--", "curl", "-s", "-m", "20", url)...)
	}
	r := get(nil, "http://outside.dsb.test/")
	if r.code != 0 || !strings.Contains(r.stdout, "To allow it, run devsandbox with --allow outside.dsb.test:80 (or add it to egress.allow).") {
		t.Fatalf("the 403 for port 80 does not advise outside.dsb.test:80:\n%s", r)
	}
	s := run(t, p.dir, nil, "", "logs", "proxy", "--suggest")
	var entries []string
	for line := range strings.Lines(s.stdout) {
		if !strings.HasPrefix(line, "#") {
			entries = append(entries, strings.TrimSpace(line))
		}
	}
	if s.code != 0 || !slices.Equal(entries, []string{`"outside.dsb.test:80",`}) {
		t.Fatalf("logs proxy --suggest: entries %q, want only \"outside.dsb.test:80\":\n%s", entries, s)
	}
	if r := get([]string{"outside.dsb.test:80"}, "http://outside.dsb.test/"); r.code != 0 || r.stdout != "PORT80\n" {
		t.Errorf("the pasted entry does not reach port 80:\n%s", r)
	}
	if r := get([]string{"outside.dsb.test:80"}, "http://outside.dsb.test:8080/"); r.code != 0 || !strings.Contains(r.stdout, "refused by rule") {
		t.Errorf("the pasted entry for port 80 opens port 8080 too:\n%s", r)
	}
}
