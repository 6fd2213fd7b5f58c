package docker

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/proxy/companion"
)

// The lister of a remote engine's host addresses: devsandbox-proxy alone, in the host
// network namespace, as the sandbox's user, with no capability, no mount, a read-only
// root and a small pids limit.
func TestHostAddressesConfig(t *testing.T) {
	p := basePlan()
	p.Proxy = isolator.ProxyConfig{Session: "5e55"}
	cfg, hc := hostAddressesConfig(p, "img", nil, map[string]string{LabelProject: "pj"})
	if !slices.Equal(cfg.Entrypoint, []string{container.ShipDir + "/" + proxyName}) || !slices.Equal(cfg.Cmd, []string{companion.HostAddressesArg}) {
		t.Errorf("command: %v %v", cfg.Entrypoint, cfg.Cmd)
	}
	if cfg.Image != "img" || cfg.OpenStdin || cfg.Labels[LabelRole] != roleCompanion || cfg.Labels[LabelSession] != "5e55" || cfg.Labels[LabelProject] != "pj" {
		t.Errorf("config: %+v", cfg)
	}
	if hc.NetworkMode != "host" || !slices.Equal(hc.CapDrop, []string{"ALL"}) || !slices.Equal(hc.SecurityOpt, []string{"no-new-privileges"}) ||
		!hc.ReadonlyRootfs || len(hc.Binds) != 0 || len(hc.Mounts) != 0 || hc.Privileged || hc.PidsLimit == nil || *hc.PidsLimit > 64 {
		t.Errorf("host config: %+v", hc)
	}
}

// A tcp:// engine's API address is refused too (a NAT's address the host has no
// interface for); a loopback one (a tunnel's end here) and other schemes add none.
func TestAPIAddresses(t *testing.T) {
	for host, want := range map[string][]string{
		"tcp://192.0.2.7:2376":          {"192.0.2.7"},
		"tcp://[2001:db8::7]:2376":      {"2001:db8::7"},
		"tcp://127.0.0.1:12376":         nil,
		"unix:///var/run/docker.sock":   nil,
		"ssh://user@engine.example":     nil,
		"tcp://[::ffff:192.0.2.8]:2375": {"192.0.2.8"},
	} {
		got, err := apiAddresses(context.Background(), host)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("apiAddresses(%s) = %v, %v; want %v", host, got, err, want)
		}
	}
}

// In allowlist mode on a remote engine, an allowed name resolved at launch to one of
// the engine host's addresses, or a form embedding one, fails the launch; a denied
// name, an address entry and another host's address go ahead.
func TestAllowlistOpensEngineHost(t *testing.T) {
	engineHost := []string{"10.0.0.5", "172.17.0.1", "2001:db8:5::5"}
	entry := func(s string) egress.Entry {
		e, err := egress.ParseEntry(s)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, tc := range []struct {
		allow, deny []string
		addr        string
		ok          bool
	}{
		{allow: []string{"cdn.attacker.test"}, addr: "10.0.0.5"},
		{allow: []string{"cdn.attacker.test:443"}, addr: "172.17.0.1"},
		{allow: []string{"cdn.attacker.test"}, addr: "2001:db8:5::5"},
		{allow: []string{"cdn.attacker.test"}, addr: "::ffff:10.0.0.5"},
		{allow: []string{"cdn.attacker.test"}, addr: "64:ff9b::a00:5"},
		{allow: []string{"cdn.attacker.test"}, addr: "10.0.0.6", ok: true},
		{allow: []string{"10.0.0.5"}, deny: []string{"cdn.attacker.test"}, addr: "10.0.0.5", ok: true},
	} {
		r := egress.Rules{Mode: egress.Allowlist}
		for _, s := range tc.allow {
			r.Allow = append(r.Allow, entry(s))
		}
		for _, s := range tc.deny {
			r.Deny = append(r.Deny, entry(s))
		}
		r.Resolved = []egress.Resolved{{Host: "cdn.attacker.test", Addrs: []netip.Addr{netip.MustParseAddr(tc.addr)}}}
		err := allowlistOpensEngineHost(r, engineHost)
		if tc.ok != (err == nil) || err != nil && !errors.Is(err, isolator.ErrConfig) {
			t.Errorf("allow %v deny %v, cdn.attacker.test at %s: %v", tc.allow, tc.deny, tc.addr, err)
		}
		if want := allowlistNames(r); want != slices.Contains(tc.allow, "cdn.attacker.test") && !slices.Contains(tc.allow, "cdn.attacker.test:443") {
			t.Errorf("allowlistNames = %v for allow %v", want, tc.allow)
		}
	}
	if err := allowlistOpensEngineHost(egress.Rules{Mode: egress.Allowlist, Allow: []egress.Entry{entry("cdn.attacker.test")},
		Resolved: []egress.Resolved{{Host: "cdn.attacker.test", Addrs: []netip.Addr{netip.MustParseAddr("10.0.0.5")}}}}, engineHost); err == nil ||
		err.Error() != "configuration does not fit this host: egress allowlist: cdn.attacker.test resolves to 10.0.0.5, an address of the host the docker engine runs on, which only an IP or CIDR entry opens (a name's addresses are its DNS's choice); add the address as an entry if you mean to reach it" {
		t.Errorf("the error: %v", err)
	}
}
