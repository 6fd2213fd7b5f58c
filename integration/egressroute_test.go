//go:build integration

package integration

import (
	"strings"
	"testing"
)

// ipv6Defaults prints "v6default DEV" for each IPv6 default route the sandbox has
// (the kernel's unreachable one on lo aside), then "end".
const ipv6Defaults = `awk '$1 == "00000000000000000000000000000000" && $2 == "00" && $10 != "lo" {print "v6default", $10}' /proc/net/ipv6_route; echo end`

// TestEgressRouteGoneForFamilyWithNothingAllowed: under an allowlist whose entries
// are all IPv4, the sandbox's IPv6 default route is removed (docs/isolators.md: "for
// an address family with nothing allowed, ... removes its default route"; the pasta
// prologue does it for bwrap, nsenter for krun), a second barrier behind the
// firewall's. The control, with an IPv6 entry, keeps the route: the probe sees one
// when it is there. Docker's firewall helper removes no route; it is not run here.
func TestEgressRouteGoneForFamilyWithNothingAllowed(t *testing.T) {
	var isos []string
	for _, iso := range isolators() {
		if iso == "bwrap" || iso == "krun" {
			isos = append(isos, iso)
		}
	}
	if len(isos) == 0 {
		t.Skip("only bwrap and krun remove the default route of a family with nothing allowed: add one to DEVSANDBOX_IT_ISOLATORS")
	}
	forEachIsolatorOf(t, isos, func(t *testing.T, iso string) {
		p := newProject(t)
		control := p.mustSandbox(iso, []string{"--egress=allowlist", "--allow", "192.0.2.1:443", "--allow", "[2001:db8::1]:443"}, ipv6Defaults)
		if !strings.Contains(control, "v6default ") {
			needOrSkip(t, "the sandbox has no IPv6 default route even with an IPv6 allow entry (the host has none to give it): %q", control)
			return
		}
		out := p.mustSandbox(iso, []string{"--egress=allowlist", "--allow", "192.0.2.1:443"}, ipv6Defaults)
		if out != "end\n" {
			t.Errorf("with only IPv4 allowed, the sandbox kept an IPv6 default route:\n%s", out)
		}
	})
}
