package docker

import (
	"encoding/json"
	"testing"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
)

// The companion containers' whole specs (Config and HostConfig), one-shot with a
// published port, kept, and kept on a rootless engine (the command and the companion
// as the container's root), against testdata/companion_NAME.golden (go test -update
// rewrites them). The companion holds the session's credentials and MITM CA key: what
// a process that got into it may change is what these specs leave writable.
func TestCompanionSpecGolden(t *testing.T) {
	labels := map[string]string{LabelProject: "0123abcd", LabelUser: "1000", LabelVersion: "v1"}
	plan := func(root bool) *isolator.Plan {
		p := basePlan()
		p.Egress = egress.Rules{Mode: egress.Proxy, Forwards: []egress.Forward{{HostPort: 18080, SandboxPort: 3000}}}
		p.Proxy.Session = "5e55"
		p.User.ContainerRoot = root
		return p
	}
	for _, tc := range []struct {
		name string
		root bool
		kept bool
	}{{"oneshot", false, false}, {"kept", false, true}, {"kept_rootless", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			p := plan(tc.root)
			cfg, hc := companionConfig(p, "img", []string{"GODEBUG=x=1"}, "vol", labels, true)
			if tc.kept {
				cfg, hc = keptCompanionConfig(p, "img", []string{"GODEBUG=x=1"}, "vol", labels)
			}
			b, err := json.MarshalIndent(struct{ Config, Host any }{cfg, hc}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "companion_"+tc.name+".golden", string(b)+"\n")
		})
	}
}
