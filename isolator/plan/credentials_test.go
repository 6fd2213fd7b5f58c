package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
)

// TestBuildWithholdsCredentials: what the proxy adds never enters the sandbox: not the
// value_env variable (passed through, as a secret, or by passthrough_all), not another
// variable holding the same value, not a value_file the project would show.
func TestBuildWithholdsCredentials(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.proj+"/.tokens/npm", "npm_FILEtoken99\n")
	cfg := f.load(t, "GITHUB_TOKEN=ghp_SAMEtoken1234", "GH_TOKEN=ghp_SAMEtoken1234", "EDITOR=vi", "NPM_COPY=npm_FILEtoken99")
	cfg.Env.PassthroughAll = true
	cfg.Secrets.Env = []string{"GITHUB_TOKEN", "GH_TOKEN"}
	cfg.Proxy.MITM = true
	cfg.Proxy.Credentials = []config.Credential{
		{Host: "api.github.com", Header: "Authorization", ValueEnv: "GITHUB_TOKEN", Format: "Bearer {}"},
		{Host: "registry.npmjs.org", Header: "Authorization", ValueFile: f.proj + "/.tokens/npm"},
		{Host: "unset.test", Header: "X-Key", ValueEnv: "UNSET_KEY"},
	}
	p, warns := f.build(t, cfg)
	for _, e := range p.Env {
		if v := e.Value; strings.Contains(v, "ghp_SAME") || strings.Contains(v, "npm_FILE") {
			t.Errorf("%s holds a credential", e.Name)
		}
	}
	if len(p.Secrets) != 0 {
		t.Errorf("secrets %+v, want none", p.Secrets)
	}
	if !slices.ContainsFunc(p.Mounts, func(m isolator.Mount) bool {
		return m.Kind == isolator.MaskFile && m.Dest == f.proj+"/.tokens/npm"
	}) {
		t.Error("the value_file in the project is not masked")
	}
	want := []string{
		"proxy.credentials[2]: UNSET_KEY is not set in the host environment; the proxy adds no X-Key for unset.test",
		"GH_TOKEN holds the value of proxy.credentials[0]; it is withheld from the sandbox (the proxy adds the credential for api.github.com)",
		"NPM_COPY holds the value of proxy.credentials[1]; it is withheld from the sandbox (the proxy adds the credential for registry.npmjs.org)",
	}
	for _, w := range want {
		if !slices.Contains(warns, w) {
			t.Errorf("no warning %q in %q", w, warns)
		}
	}
}
