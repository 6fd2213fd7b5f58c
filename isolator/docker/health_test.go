package docker

import (
	"slices"
	"testing"

	dockercontainer "github.com/docker/docker/api/types/container"

	"github.com/devsandbox/devsandbox/egress"
)

// Every container devsandbox renders turns the image's HEALTHCHECK off: the
// companion (beside the proxy and its secrets), the firewall helper (root, NET_ADMIN)
// and the sandbox (outside its init). Left unset, the engine runs the image's.
func TestContainersTurnHealthcheckOff(t *testing.T) {
	p := basePlan()
	p.Egress = egress.Rules{Mode: egress.Proxy}
	p.Proxy.Session = "5e55"
	p.Egress.PublishDir, p.Egress.Proxy.Unix, p.Egress.SocketDir = "/run/x/publish-5e55", "/run/x/proxy-5e55.sock", "/run/x"
	comp, _ := companionConfig(p, "img", "vol", map[string]string{LabelUser: "1000"}, false)
	fw, _ := firewallHelper([]string{"x"}, nil, "target", "img", nil)
	o := opts
	o.Shipped, o.EndpointVolume = true, "vol"
	spec, err := containerConfig(p, o)
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]*dockercontainer.Config{"companion": comp, "firewall helper": fw, "sandbox": spec.Config} {
		if cfg.Healthcheck == nil || !slices.Equal(cfg.Healthcheck.Test, []string{"NONE"}) {
			t.Errorf("%s: Healthcheck %+v, want the image's turned off (NONE)", name, cfg.Healthcheck)
		}
	}
}
