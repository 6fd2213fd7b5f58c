//go:build integration

package integration

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/internal/hostaddr"
)

// TestCompanionRefusesEngineHostAddresses: on every docker variant the companion's
// proxy knows the engine host's interface addresses as that host's own — which no
// name entry opens, and no proxy default lets through — and not only its own and its
// gateway. The engines here all run on this machine, so its addresses are the engine
// host's: the docker0 bridge's, the LAN's and the IPv6 ones. A remote engine reached
// over TCP (docker-tcp) was told none of them: the proxy refused them as mere
// private or documentation addresses, which a host-name entry opens, and a public
// one of the engine host passed under proxy.default = "allow". Each request is
// refused before any dial, so nothing needs to listen.
func TestCompanionRefusesEngineHostAddresses(t *testing.T) {
	addrs, err := hostaddr.Read()
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, a := range addrs {
		if a.IsLoopback() || a.IsLinkLocalUnicast() || !a.IsGlobalUnicast() && !a.IsPrivate() {
			continue
		}
		urls = append(urls, "http://"+netip.AddrPortFrom(a, 9).String()+"/")
	}
	if len(urls) == 0 {
		t.Skip("this machine has no address but loopback and link-local ones")
	}
	var script strings.Builder
	for i, u := range urls {
		fmt.Fprintf(&script, "echo \"a%d $(curl -s -m 10 -x \"$HTTP_PROXY\" '%s' | head -c 300 | tr '\\n' ' ')\"\n", i, u)
	}
	forEachIsolatorOf(t, withTCP(dockerVariants()), func(t *testing.T, iso string) {
		p := newProject(t)
		// A one-shot run's companion, and a kept container's session process in the
		// project's kept companion.
		for _, flags := range [][]string{{"--egress=proxy"}, {"--egress=proxy", "--keep-container"}} {
			got := parseLabels(p.mustSandbox(iso, flags, script.String()))
			for i, u := range urls {
				if body := got[fmt.Sprintf("a%d", i)]; !strings.Contains(body, "an address of this host") {
					t.Errorf("%v: GET %s (the engine host's address) through the companion's proxy: %q, want a refusal as an address of this host", flags, u, body)
				}
			}
		}
	})
}

// TestAllowlistNameOnRemoteEngines: in allowlist mode an allowed name is checked against
// the addresses of the host the docker engine runs on, read on that host's network for
// a remote engine (over TCP here); a name of the outside host goes ahead there and
// reaches it, and one of the engine host's own addresses fails the launch (125)
// before the command runs. The names come from an /etc/hosts bound over this host's,
// as in TestAllowlistNameToHostAddressRefused.
func TestAllowlistNameOnRemoteEngines(t *testing.T) {
	o := newOutside(t)
	hostSide := o.addr[:strings.LastIndexByte(o.addr, '.')] + ".1"
	d := t.TempDir()
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	hosts := filepath.Join(d, "hosts")
	content := "127.0.0.1 localhost\n" + hostSide + " hostside.dsb.test\n" + o.addr + " outside.dsb.test\n"
	if err := os.WriteFile(hosts, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	binds := map[string]string{"/etc/hosts": hosts}
	// This machine's engine cannot mount the launch's pinned directories from the test's
	// mount namespace (it runs in the host's): the remote variants only.
	remote := slices.DeleteFunc(dockerVariants(), func(iso string) bool { return iso != remoteDocker })
	forEachIsolatorOf(t, withTCP(remote), func(t *testing.T, iso string) {
		p := newProject(t)
		args, env := isolatorArgs([]string{"--isolator=" + iso, "--egress=allowlist", "--allow", "outside.dsb.test:8080", "--",
			"curl", "-sf", "--noproxy", "*", "-m", "10", "http://outside.dsb.test:8080/"}, nil)
		if r := inMountNSEnv(t, p.dir, env, binds, args...); r.code != 0 || r.stdout != "OUTSIDE\n" {
			t.Errorf("--allow outside.dsb.test:8080 (the outside host): want it reached:\n%s", r)
		}
		args, env = isolatorArgs([]string{"--isolator=" + iso, "--egress=allowlist", "--allow", "hostside.dsb.test:8080", "--", "echo", "ran"}, nil)
		r := inMountNSEnv(t, p.dir, env, binds, args...)
		if want := "hostside.dsb.test resolves to " + hostSide; r.code != 125 || strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, want) {
			t.Errorf("--allow hostside.dsb.test:8080 (the engine host's address): want 125 and %q:\n%s", want, r)
		}
	})
}
