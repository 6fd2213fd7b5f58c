//go:build integration

package integration

import (
	"fmt"
	"net/netip"
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
		out := p.mustSandbox(iso, []string{"--egress=proxy"}, script.String())
		got := parseLabels(out)
		for i, u := range urls {
			if body := got[fmt.Sprintf("a%d", i)]; !strings.Contains(body, "an address of this host") {
				t.Errorf("GET %s (the engine host's address) through the companion's proxy: %q, want a refusal as an address of this host", u, body)
			}
		}
	})
}
