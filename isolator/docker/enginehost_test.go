package docker

import (
	"context"
	"slices"
	"testing"

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
