package docker

import (
	"slices"
	"testing"

	"github.com/docker/docker/api/types/mount"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// A container with no network (egress none, proxy) is created with NetworkDisabled,
// which spares the engine's network hook at its start; the engine then writes no
// /etc/hosts (and an empty one above the image's), so the container binds
// devsandbox's, with the loopback names, and its init checks it is there. A container with a network keeps the engine's.
func TestNoNetworkContainer(t *testing.T) {
	const hostsWant = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
	proxy := egress.Rules{Mode: egress.Proxy, Proxy: egress.Endpoint{Unix: "/run/x/proxy-s.sock"}, SocketDir: "/run/x"}
	for _, tc := range []struct {
		name     string
		rules    egress.Rules
		keep     bool
		disabled bool
	}{
		{"none", egress.Rules{Mode: egress.None}, false, true},
		{"none kept", egress.Rules{Mode: egress.None}, true, true},
		{"proxy", proxy, false, true},
		{"proxy kept", proxy, true, true},
		{"open", egress.Rules{Mode: egress.Open}, false, false},
	} {
		for _, shipped := range []bool{false, true} {
			p := basePlan()
			p.Egress = tc.rules
			p.Proxy.Session = "s"
			o := opts
			o.Keep = tc.keep
			if shipped {
				o = engineOptions(p, o)
			}
			s, err := containerConfig(p, o)
			if err != nil {
				t.Fatalf("%s (shipped %v): %v", tc.name, shipped, err)
			}
			if s.Config.NetworkDisabled != tc.disabled || string(s.Host.NetworkMode) != map[bool]string{true: "none", false: "default"}[tc.disabled] {
				t.Errorf("%s (shipped %v): NetworkDisabled %v, NetworkMode %q; want %v", tc.name, shipped, s.Config.NetworkDisabled, s.Host.NetworkMode, tc.disabled)
			}
			man := s.Layout.Manifest
			if s.Layout.Session != nil {
				man = s.Layout.Session
			}
			checked := slices.ContainsFunc(man.Checks, func(c wire.Check) bool {
				return c.Kind == wire.CheckData && c.Path == "/etc/hosts" && c.Size == int64(len(hostsWant))
			})
			if checked != tc.disabled {
				t.Errorf("%s (shipped %v): the init checks devsandbox's /etc/hosts: %v, want %v", tc.name, shipped, checked, tc.disabled)
			}
			bound := slices.ContainsFunc(s.Host.Mounts, func(m mount.Mount) bool { return m.Target == "/etc/hosts" && m.ReadOnly })
			content := slices.ContainsFunc(s.Layout.Contents, func(f container.ImageFile) bool {
				return f.Path == "/etc/hosts" && string(f.Content) == hostsWant
			})
			if bound != tc.disabled || content != (tc.disabled && shipped) {
				t.Errorf("%s (shipped %v): /etc/hosts bound %v, an engine-side content %v", tc.name, shipped, bound, content)
			}
		}
	}
}
