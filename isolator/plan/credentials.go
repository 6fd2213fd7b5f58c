package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
)

// minSecretLen is the shortest credential value looked for in other variables: a
// shorter one would match by accident.
const minSecretLen = 8

// credentialSecrets are the host variable names and the values of proxy.credentials:
// what the proxy adds to requests, and what must therefore never enter the sandbox.
// A value_env that is not set is reported in warns (the proxy then adds nothing).
func credentialSecrets(cfg *config.Config, h config.Host, pr Probe, warns []string) (names map[string]int, values map[string]int, _ []string) {
	names, values = map[string]int{}, map[string]int{}
	for i, c := range cfg.Proxy.Credentials {
		v := ""
		switch {
		case c.ValueEnv != "":
			names[c.ValueEnv] = i
			var ok bool
			if v, ok = h.Vars[c.ValueEnv]; !ok {
				warns = append(warns, fmt.Sprintf("proxy.credentials[%d]: %s is not set in the host environment; the proxy adds no %s for %s", i, c.ValueEnv, c.Header, c.Host))
			}
		case pr.ReadFile != nil:
			if b, err := pr.ReadFile(c.ValueFile); err == nil {
				v = strings.TrimSpace(string(b))
			}
		}
		if len(v) >= minSecretLen {
			values[v] = i
		}
	}
	return names, values, warns
}

// withholdCredentials removes from the sandbox's environment and env secrets every
// variable named as a credential's value_env, and every other one whose value holds a
// credential's value (a tool's GH_TOKEN holding the same token as GITHUB_TOKEN, say),
// with a warning for the latter. A credential's placeholder_env, when set, is added
// later, by whoever starts the proxy.
func withholdCredentials(p *isolator.Plan, cfg *config.Config, h config.Host, pr Probe, warns []string) []string {
	if len(cfg.Proxy.Credentials) == 0 {
		return warns
	}
	names, values, warns := credentialSecrets(cfg, h, pr, warns)
	if !p.Egress.NeedsProxy() {
		warns = append(warns, fmt.Sprintf("proxy.credentials apply only in the egress modes proxy and allowlist; in mode %s the proxy adds none, and their variables are still withheld from the sandbox", p.Egress.Mode))
	}
	holds := func(name, value string) bool {
		if _, ok := names[name]; ok {
			return true
		}
		for v, i := range values {
			if strings.Contains(value, v) {
				warns = append(warns, fmt.Sprintf("%s holds the value of proxy.credentials[%d]; it is withheld from the sandbox (the proxy adds the credential for %s)", name, i, cfg.Proxy.Credentials[i].Host))
				return true
			}
		}
		return false
	}
	p.Env = slices.DeleteFunc(p.Env, func(e isolator.EnvVar) bool { return holds(e.Name, e.Value) })
	p.Secrets = slices.DeleteFunc(p.Secrets, func(s isolator.Secret) bool {
		return !s.AsFile && holds(s.Name, h.Vars[s.EnvSource])
	})
	return warns
}

// credentialFiles are the value_file paths of proxy.credentials: masked wherever the
// sandbox would see them.
func credentialFiles(cfg *config.Config) []string {
	var out []string
	for _, c := range cfg.Proxy.Credentials {
		if c.ValueFile != "" {
			out = append(out, c.ValueFile)
		}
	}
	return out
}
