package docker

import (
	"go/ast"
	"go/token"
	"slices"
	"testing"

	dockercontainer "github.com/docker/docker/api/types/container"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/internal/sourcecheck"
)

// Every container devsandbox renders turns the image's HEALTHCHECK off: the
// companion (beside the proxy and its secrets), the firewall helper (root, NET_ADMIN)
// and the sandbox (outside its init). Left unset, the engine runs the image's.
func TestContainersTurnHealthcheckOff(t *testing.T) {
	p := basePlan()
	p.Egress = egress.Rules{Mode: egress.Proxy}
	p.Proxy.Session = "5e55"
	p.Egress.PublishDir, p.Egress.Proxy.Unix, p.Egress.SocketDir = "/run/x/publish-5e55", "/run/x/proxy-5e55.sock", "/run/x"
	comp, _ := companionConfig(p, "img", nil, "vol", map[string]string{LabelUser: "1000"}, false)
	fw, _ := firewallHelper([]string{"x"}, nil, "target", "img", nil, nil)
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

// Every container Config the package writes names a Healthcheck: a create path the
// fake engine's flows do not reach (the home volume's chown, the giveback helper), or
// one added later, cannot leave the image's on. Read from the package's own source.
func TestEveryContainerConfigNamesHealthcheck(t *testing.T) {
	seen := sourcecheck.Literals(t, "dockercontainer", "Config", func(fset *token.FileSet, lit *ast.CompositeLit) {
		if !sourcecheck.HasField(lit, "Healthcheck", nil) {
			t.Errorf("%s: a container Config without Healthcheck (noHealthcheck()): the engine would run the image's", fset.Position(lit.Pos()))
		}
	})
	if seen < 6 {
		t.Fatalf("found %d container Configs in the package's source; the search no longer finds them", seen)
	}
}
