package planner

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/tools"
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

// TestToolKeys: tools.<name>.key = "proxy" turns the tool's keys set on the host into
// proxy credentials toward its API (or its base URL's host), with the variable as the
// placeholder, and turns MITM on; what cannot be held fails or warns.
func TestToolKeys(t *testing.T) {
	claude := config.Credential{Host: "api.anthropic.com", Header: "x-api-key", ValueEnv: "ANTHROPIC_API_KEY", PlaceholderEnv: "ANTHROPIC_API_KEY"}
	tests := []struct {
		name  string
		tools string // [tools.*] tables
		creds string // [[proxy.credentials]] entries
		env   []string
		want  []config.Credential
		warns []string
		err   string
	}{
		{name: "default host", tools: "[tools.claude]\nkey = \"proxy\"\n", env: []string{"ANTHROPIC_API_KEY=sk-ant-12345678"},
			want: []config.Credential{claude}},
		{name: "both keys, base URL with a port", tools: "[tools.claude]\nkey = \"proxy\"\n",
			env: []string{"ANTHROPIC_API_KEY=sk-ant-12345678", "ANTHROPIC_AUTH_TOKEN=tok-12345678", "ANTHROPIC_BASE_URL=https://gw.test:8443/anthropic"},
			want: []config.Credential{
				{Host: "gw.test:8443", Header: "x-api-key", ValueEnv: "ANTHROPIC_API_KEY", PlaceholderEnv: "ANTHROPIC_API_KEY"},
				{Host: "gw.test:8443", Header: "Authorization", Format: "Bearer {}", ValueEnv: "ANTHROPIC_AUTH_TOKEN", PlaceholderEnv: "ANTHROPIC_AUTH_TOKEN"},
			}},
		{name: "plain http base URL", tools: "[tools.codex]\nkey = \"proxy\"\n",
			env:   []string{"OPENAI_API_KEY=sk-12345678", "OPENAI_BASE_URL=http://10.1.2.3:8080/v1"},
			want:  []config.Credential{{Host: "http://10.1.2.3:8080", Header: "Authorization", Format: "Bearer {}", ValueEnv: "OPENAI_API_KEY", PlaceholderEnv: "OPENAI_API_KEY"}},
			warns: []string{"tools.codex.key: OPENAI_BASE_URL is plain http://: the proxy sends OPENAI_API_KEY there unencrypted"}},
		{name: "key env", tools: "[tools.claude]\nkey = \"env\"\n", env: []string{"ANTHROPIC_API_KEY=sk-ant-12345678"}},
		{name: "no key set", tools: "[tools.gemini]\nkey = \"proxy\"\n",
			warns: []string{`tools.gemini.key = "proxy": none of GEMINI_API_KEY, GOOGLE_API_KEY is set in the host environment; no key is held for gemini`}},
		{name: "a credential of the user's names it", tools: "[tools.claude]\nkey = \"proxy\"\n",
			creds: "[proxy]\nmitm = true\n[[proxy.credentials]]\nhost = \"llm.corp.test\"\nheader = \"x-api-key\"\nvalue_env = \"ANTHROPIC_API_KEY\"\n",
			env:   []string{"ANTHROPIC_API_KEY=sk-ant-12345678"},
			want:  []config.Credential{{Host: "llm.corp.test", Header: "x-api-key", ValueEnv: "ANTHROPIC_API_KEY"}}},
		{name: "base URL without a scheme", tools: "[tools.claude]\nkey = \"proxy\"\n",
			env: []string{"ANTHROPIC_API_KEY=sk-ant-12345678", "ANTHROPIC_BASE_URL=gw.test"},
			err: `tools.claude.key: ANTHROPIC_BASE_URL is "gw.test", not an http:// or https:// URL`},
		{name: "unknown tool", tools: "[tools.nosuch]\nkey = \"proxy\"\n", err: "there is no tool nosuch"},
		{name: "unknown tool, secrets withheld", tools: "[tools.claud]\nsecrets = false\n", err: "tools.claud (CONFIG): there is no tool claud"},
		{name: "unknown tool, enabled", tools: "[tools.nosuch]\nenabled = true\n", err: "there is no tool nosuch"},
		{name: "a tool without keys", tools: "[tools.git]\nkey = \"proxy\"\n", err: "git declares no API key the proxy can hold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			writeFile(t, f.home+"/.config/devsandbox/config.toml", tt.tools+tt.creds)
			cfg := f.load(t, tt.env...)
			before := slices.Clone(cfg.Proxy.Credentials)
			got, held, warns, err := ToolKeys(cfg, tools.Default())
			if tt.err != "" {
				tt.err = strings.ReplaceAll(tt.err, "CONFIG", f.home+"/.config/devsandbox/config.toml")
				if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want ErrConfig with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Proxy.Credentials, tt.want) && !(len(got.Proxy.Credentials) == 0 && len(tt.want) == 0) {
				t.Errorf("credentials\n%+v\nwant\n%+v", got.Proxy.Credentials, tt.want)
			}
			if !slices.Equal(warns, tt.warns) {
				t.Errorf("warnings %q, want %q", warns, tt.warns)
			}
			if !slices.Equal(cfg.Proxy.Credentials, before) {
				t.Error("ToolKeys changed its input")
			}
			if n := len(tt.want) - len(before); len(held) != n || got.Proxy.MITM != (len(tt.want) > 0) {
				t.Errorf("held %+v, mitm %v", held, got.Proxy.MITM)
			}
		})
	}
}

// TestBuildHoldsToolKey: a held key leaves the sandbox's secrets (the proxy adds it),
// while the tool's other secrets still pass.
func TestBuildHoldsToolKey(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.home+"/.config/devsandbox/config.toml", "[tools.claude]\nenabled = true\nkey = \"proxy\"\n")
	cfg := f.load(t, "ANTHROPIC_API_KEY=sk-ant-12345678", "CLAUDE_CODE_OAUTH_TOKEN=oauth-12345678")
	cfg, _, _, err := ToolKeys(cfg, tools.Default())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := f.build(t, cfg)
	// The Plan is complete: the sandbox's ANTHROPIC_API_KEY is the proxy's
	// placeholder, never the host's value.
	var names []string
	for _, s := range p.Secrets {
		names = append(names, s.Name)
		if s.Name == "ANTHROPIC_API_KEY" && (!strings.HasPrefix(s.EnvSource, "DEVSANDBOX_PLACEHOLDER_") || p.HostEnv[s.EnvSource] == "sk-ant-12345678") {
			t.Errorf("the sandbox's ANTHROPIC_API_KEY comes from %s, not the proxy's placeholder", s.EnvSource)
		}
	}
	if !slices.Equal(names, []string{"CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_API_KEY"}) {
		t.Errorf("secrets %q, want CLAUDE_CODE_OAUTH_TOKEN and the placeholder ANTHROPIC_API_KEY", names)
	}
	places := KeyPlaces(cfg, tools.Default(), ToolHost(cfg.Host, probe(f.proj), f.proj))
	want := []KeyPlace{{Tool: "claude", Env: "ANTHROPIC_API_KEY", Where: "outside",
		Detail: "held by the proxy, which sets x-api-key toward api.anthropic.com; the sandbox's ANTHROPIC_API_KEY is a placeholder"}}
	if !slices.Equal(places, want) {
		t.Errorf("key places %+v, want %+v", places, want)
	}
}

// TestBuildRefusesUnheldToolKey: a configuration that did not come through ToolKeys
// (an embedder calling config.Load and Build directly) with tools.<name>.key =
// "proxy" and the key set on the host is refused by Build, naming the key and the
// fix, rather than passing the key into the sandbox as a plain secret. The same
// configuration through ToolKeys builds; a key ToolKeys cannot hold (no host) or one
// not set on the host is no reason to refuse.
func TestBuildRefusesUnheldToolKey(t *testing.T) {
	tests := []struct {
		name, tools string
		env         []string
		toolKeys    bool
		err         string // "" builds
	}{
		{name: "not through ToolKeys", tools: "[tools.claude]\nenabled = true\nkey = \"proxy\"\n", env: []string{"ANTHROPIC_API_KEY=sk-ant-12345678"},
			err: `tools.claude.key = "proxy" (CONFIG): ANTHROPIC_API_KEY is set on the host but no proxy credential holds it, so it would enter the sandbox; pass the configuration through planner.ToolKeys before Build (planner.Load and LoadDir do), or set tools.claude.key = "env"`},
		{name: "the second key", tools: "[tools.claude]\nenabled = true\nkey = \"proxy\"\n", env: []string{"ANTHROPIC_AUTH_TOKEN=tok-12345678"},
			err: "ANTHROPIC_AUTH_TOKEN is set on the host but no proxy credential holds it"},
		{name: "a disabled tool's key", tools: "[tools.codex]\nenabled = false\nkey = \"proxy\"\n", env: []string{"OPENAI_API_KEY=sk-12345678"},
			err: "tools.codex.key"},
		{name: "through ToolKeys", tools: "[tools.claude]\nenabled = true\nkey = \"proxy\"\n", env: []string{"ANTHROPIC_API_KEY=sk-ant-12345678"}, toolKeys: true},
		{name: "key not set", tools: "[tools.claude]\nenabled = true\nkey = \"proxy\"\n"},
		{name: "key env", tools: "[tools.claude]\nenabled = true\nkey = \"env\"\n", env: []string{"ANTHROPIC_API_KEY=sk-ant-12345678"}},
		{name: "no host to hold it for", tools: "[tools.copilot]\nkey = \"proxy\"\n", env: []string{"COPILOT_PROVIDER_API_KEY=sk-12345678"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			file := f.home + "/.config/devsandbox/config.toml"
			writeFile(t, file, tt.tools)
			cfg := f.load(t, tt.env...)
			if tt.toolKeys {
				var err error
				if cfg, _, _, err = ToolKeys(cfg, tools.Default()); err != nil {
					t.Fatal(err)
				}
			}
			p, _, err := f.tryBuild(cfg)
			if tt.err == "" {
				if err != nil {
					t.Fatalf("Build: %v", err)
				}
				for _, s := range p.Secrets {
					if v := p.HostEnv[s.EnvSource]; tt.toolKeys && strings.HasPrefix(v, "sk-") {
						t.Errorf("secret %s carries the host's key", s.Name)
					}
				}
				return
			}
			want := strings.ReplaceAll(tt.err, "CONFIG", file)
			if !errors.Is(err, ErrConfig) || err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Build: %v\nwant ErrConfig with %q", err, want)
			}
		})
	}
}

// TestBuildHiddenCredentialFile: a value_file behind a hide_paths mask is hidden
// already; no mask file of its own shows its name in the hidden directory.
func TestBuildHiddenCredentialFile(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.proj+"/.tokens/npm", "npm_FILEtoken99\n")
	cfg := f.load(t)
	cfg.Proxy.MITM = true
	cfg.Proxy.Credentials = []config.Credential{{Host: "registry.npmjs.org", Header: "Authorization", ValueFile: f.proj + "/.tokens/npm"}}
	cfg.Sandbox.HidePaths = []string{f.proj + "/.tokens"}
	p, _ := f.build(t, cfg)
	var masks []string
	for _, m := range p.Mounts {
		if (m.Kind == isolator.MaskFile || m.Kind == isolator.MaskDir) && isolator.Within(m.Target(f.home), f.proj+"/.tokens") {
			masks = append(masks, m.Target(f.home))
		}
	}
	if !slices.Equal(masks, []string{f.proj + "/.tokens"}) {
		t.Errorf("masks in the hidden directory: %q; want only the hide_paths mask of %s/.tokens", masks, f.proj)
	}
}
