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
	bearerTo := func(env, host string) config.Credential {
		return config.Credential{Host: host, Header: "Authorization", Format: "Bearer {}", ValueEnv: env, PlaceholderEnv: env}
	}
	openai := func(host string) config.Credential { return bearerTo("OPENAI_API_KEY", host) }
	const codexKey = "[tools.codex]\nkey = \"proxy\"\n"
	const gw = "[model_providers.gw]\nname = \"GW\"\nbase_url = \"https://gw.corp.test/v1\"\n"
	tests := []struct {
		name  string
		tools string            // [tools.*] tables
		creds string            // [[proxy.credentials]] entries
		files map[string]string // path ($ROOT, $HOME, $PROJ) -> content, or "->" target of a link
		env   []string
		want  []config.Credential
		warns []string
		err   string
		class error // the error's class; ErrConfig when nil
	}{
		{name: "default host", tools: "[tools.claude]\nkey = \"proxy\"\n", env: []string{"ANTHROPIC_API_KEY=sk-ant-12345678"},
			want: []config.Credential{claude}},
		{name: "both keys, base URL with a port", tools: "[tools.claude]\nkey = \"proxy\"\n",
			env: []string{"ANTHROPIC_API_KEY=sk-ant-12345678", "ANTHROPIC_AUTH_TOKEN=tok-12345678", "ANTHROPIC_BASE_URL=https://gw.test:8443/anthropic"},
			want: []config.Credential{
				{Host: "gw.test:8443", Header: "x-api-key", ValueEnv: "ANTHROPIC_API_KEY", PlaceholderEnv: "ANTHROPIC_API_KEY"},
				{Host: "gw.test:8443", Header: "Authorization", Format: "Bearer {}", ValueEnv: "ANTHROPIC_AUTH_TOKEN", PlaceholderEnv: "ANTHROPIC_AUTH_TOKEN"},
			}},
		{name: "plain http base URL", tools: "[tools.qwen]\nkey = \"proxy\"\n",
			env:   []string{"OPENAI_API_KEY=sk-12345678", "OPENAI_BASE_URL=http://10.1.2.3:8080/v1"},
			want:  []config.Credential{openai("http://10.1.2.3:8080")},
			warns: []string{"tools.qwen.key: OPENAI_BASE_URL is plain http://: the proxy sends OPENAI_API_KEY there unencrypted"}},
		{name: "codex", tools: "[tools.codex]\nkey = \"proxy\"\n", env: []string{"OPENAI_API_KEY=sk-12345678"},
			want: []config.Credential{openai("api.openai.com")}},
		// Codex ignores OPENAI_BASE_URL (openai/codex issue 16719): its key stays
		// with api.openai.com, where Codex sends it.
		{name: "codex ignores OPENAI_BASE_URL", tools: "[tools.codex]\nkey = \"proxy\"\n",
			env:   []string{"OPENAI_API_KEY=sk-12345678", "CODEX_API_KEY=sk-codex-12345678", "OPENAI_BASE_URL=https://gw.test/v1"},
			want:  []config.Credential{openai("api.openai.com"), {Host: "api.openai.com", Header: "Authorization", Format: "Bearer {}", ValueEnv: "CODEX_API_KEY", PlaceholderEnv: "CODEX_API_KEY"}},
			warns: []string{"tools.codex.key: OPENAI_BASE_URL is set on the host, but codex does not read it: its key is held for api.openai.com, where codex sends it"}},
		{name: "codex's openai_base_url", tools: "[tools.codex]\nkey = \"proxy\"\n",
			files: map[string]string{"$HOME/.codex/config.toml": "model = \"o3\"\nopenai_base_url = \"https://llm.corp.test:8443/v1\"\n[profiles.x]\nopenai_base_url = \"https://other.test\"\n"},
			env:   []string{"OPENAI_API_KEY=sk-12345678", "OPENAI_BASE_URL=https://gw.test/v1"},
			want:  []config.Credential{openai("llm.corp.test:8443")},
			warns: []string{"tools.codex.key: OPENAI_BASE_URL is set on the host, but codex does not read it: its key is held for llm.corp.test:8443, where codex sends it"}},
		{name: "codex's openai_base_url under CODEX_HOME", tools: "[tools.codex]\nkey = \"proxy\"\n",
			files: map[string]string{"$ROOT/codex/config.toml": "openai_base_url = \"https://llm.corp.test/v1\"\n", "$HOME/.codex/config.toml": "openai_base_url = \"https://not.this.test\"\n"},
			env:   []string{"OPENAI_API_KEY=sk-12345678", "CODEX_HOME=$ROOT/codex"},
			want:  []config.Credential{openai("llm.corp.test")}},
		{name: "codex's config.toml does not parse", tools: "[tools.codex]\nkey = \"proxy\"\n",
			files: map[string]string{"$HOME/.codex/config.toml": "model = \"o3\"\nopenai_base_url = https://llm.corp.test\n"},
			env:   []string{"OPENAI_API_KEY=sk-12345678"},
			want:  []config.Credential{openai("api.openai.com")},
			warns: []string{"tools.codex.key: setting cannot be read: $HOME/.codex/config.toml: it is not valid TOML (line 2, column 19); OPENAI_API_KEY is held for api.openai.com"}},
		{name: "codex's openai_base_url not a string", tools: "[tools.codex]\nkey = \"proxy\"\n",
			files: map[string]string{"$HOME/.codex/config.toml": "openai_base_url = 8443\n"},
			env:   []string{"OPENAI_API_KEY=sk-12345678"},
			want:  []config.Credential{openai("api.openai.com")},
			warns: []string{"tools.codex.key: setting cannot be read: openai_base_url in $HOME/.codex/config.toml: it is a int64, not a string; OPENAI_API_KEY is held for api.openai.com"}},
		// The sandbox can write the project: what a file there says must not steer
		// the key.
		{name: "codex's config.toml in the project", tools: "[tools.codex]\nkey = \"proxy\"\n",
			files: map[string]string{"$PROJ/.codex/config.toml": "openai_base_url = \"https://evil.test\"\n"},
			env:   []string{"OPENAI_API_KEY=sk-12345678", "CODEX_HOME=$PROJ/.codex"},
			want:  []config.Credential{openai("api.openai.com")},
			warns: []string{"tools.codex.key: setting cannot be read: $PROJ/.codex/config.toml: it lies in the project ($PROJ/.codex/config.toml), where the sandbox can write it; OPENAI_API_KEY is held for api.openai.com"}},
		{name: "codex's config.toml links into the project", tools: "[tools.codex]\nkey = \"proxy\"\n",
			files: map[string]string{"$PROJ/dot/config.toml": "openai_base_url = \"https://evil.test\"\n", "$HOME/.codex/config.toml": "->$PROJ/dot/config.toml"},
			env:   []string{"OPENAI_API_KEY=sk-12345678"},
			want:  []config.Credential{openai("api.openai.com")},
			warns: []string{"tools.codex.key: setting cannot be read: $HOME/.codex/config.toml: it lies in the project ($PROJ/dot/config.toml), where the sandbox can write it; OPENAI_API_KEY is held for api.openai.com"}},
		{name: "codex's config.toml links elsewhere", tools: "[tools.codex]\nkey = \"proxy\"\n",
			files: map[string]string{"$ROOT/dotfiles/codex.toml": "openai_base_url = \"https://llm.corp.test\"\n", "$HOME/.codex/config.toml": "->$ROOT/dotfiles/codex.toml"},
			env:   []string{"OPENAI_API_KEY=sk-12345678"},
			want:  []config.Credential{openai("llm.corp.test")}},
		{name: "codex's openai_base_url not a URL", tools: "[tools.codex]\nkey = \"proxy\"\n",
			files: map[string]string{"$HOME/.codex/config.toml": "openai_base_url = \"llm.corp.test\"\n"},
			env:   []string{"OPENAI_API_KEY=sk-12345678"},
			err:   `tools.codex.key: openai_base_url in $HOME/.codex/config.toml is "llm.corp.test", not an http:// or https:// URL`},
		// One variable, two tools, two hosts: each tool's key goes where that tool
		// sends it, and neither loses it.
		// Codex's providers: each one that sends the key (its env_key, or Codex's
		// OpenAI login with requires_openai_auth) gets it, beside the built-in
		// provider's host, whichever model_provider selects.
		{name: "codex provider's env_key", tools: codexKey,
			files: map[string]string{"$HOME/.codex/config.toml": "model_provider = \"gw\"\n" + gw + "env_key = \"OPENAI_API_KEY\"\n"},
			env:   []string{"OPENAI_API_KEY=sk-12345678"},
			want:  []config.Credential{openai("api.openai.com"), openai("gw.corp.test")}},
		{name: "codex provider with Codex's login", tools: codexKey,
			files: map[string]string{"$HOME/.codex/config.toml": "openai_base_url = \"https://llm.corp.test/v1\"\n" + gw + "requires_openai_auth = true\n" +
				"[model_providers.own]\nbase_url = \"https://own.test/v1\"\nrequires_openai_auth = true\nexperimental_bearer_token = \"x\"\n" +
				"[model_providers.other]\nbase_url = \"https://other.test/v1\"\nenv_key = \"OTHER_API_KEY\"\n" +
				"[model_providers.none]\nbase_url = \"https://none.test/v1\"\n"},
			env: []string{"OPENAI_API_KEY=sk-12345678", "CODEX_API_KEY=sk-codex-12345678"},
			want: []config.Credential{openai("llm.corp.test"), openai("gw.corp.test"),
				bearerTo("CODEX_API_KEY", "llm.corp.test"), bearerTo("CODEX_API_KEY", "gw.corp.test")}},
		{name: "codex provider without base_url", tools: codexKey,
			files: map[string]string{"$HOME/.codex/config.toml": "openai_base_url = \"https://llm.corp.test/v1\"\n[model_providers.az]\nenv_key = \"OPENAI_API_KEY\"\n"},
			env:   []string{"OPENAI_API_KEY=sk-12345678"},
			want:  []config.Credential{openai("llm.corp.test"), openai("api.openai.com")}},
		{name: "codex provider that cannot be followed", tools: codexKey,
			files: map[string]string{"$HOME/.codex/config.toml": "[model_providers.openai]\nbase_url = \"https://evil.test/v1\"\n" +
				"[model_providers.bad]\nbase_url = \"gw.corp.test\"\nenv_key = \"OPENAI_API_KEY\"\n" +
				"[model_providers.num]\nbase_url = 8\nenv_key = \"OPENAI_API_KEY\"\n" +
				"[model_providers.plain]\nbase_url = \"http://10.1.2.3:8080/v1\"\nenv_key = \"OPENAI_API_KEY\"\n"},
			env:  []string{"OPENAI_API_KEY=sk-12345678"},
			want: []config.Credential{openai("api.openai.com"), openai("http://10.1.2.3:8080")},
			warns: []string{
				"tools.codex.key: model_providers.num in $HOME/.codex/config.toml: base_url is a int64, not a string; it is not followed",
				"tools.codex.key: model_providers.openai in $HOME/.codex/config.toml reuses the name of a provider built into Codex, which then refuses to start; it is not followed",
				`tools.codex.key: model_providers.bad in $HOME/.codex/config.toml is "gw.corp.test", not an http:// or https:// URL; the proxy cannot tell where OPENAI_API_KEY goes; OPENAI_API_KEY is not held for it`,
				"tools.codex.key: model_providers.plain in $HOME/.codex/config.toml is plain http://: the proxy sends OPENAI_API_KEY there unencrypted"}},
		// Codex's profiles: $CODEX_HOME/NAME.config.toml, merged over config.toml
		// with --profile NAME, which devsandbox cannot see: every one counts.
		// [profiles.*] tables Codex no longer reads.
		{name: "codex profiles", tools: codexKey,
			files: map[string]string{
				"$ROOT/codex/config.toml":      gw + "[profiles.old]\nmodel_provider = \"gw\"\nopenai_base_url = \"https://old.test\"\n",
				"$ROOT/codex/work.config.toml": "openai_base_url = \"https://work.test/v1\"\n[model_providers.gw]\nenv_key = \"OPENAI_API_KEY\"\n",
				"$ROOT/codex/bad.config.toml":  "openai_base_url = https://bad.test\n",
				"$ROOT/codex/config.toml.bak":  "openai_base_url = \"https://bak.test\"\n"},
			env:   []string{"OPENAI_API_KEY=sk-12345678", "CODEX_HOME=$ROOT/codex"},
			want:  []config.Credential{openai("api.openai.com"), openai("work.test"), openai("gw.corp.test")},
			warns: []string{"tools.codex.key: setting cannot be read: $ROOT/codex/bad.config.toml: it is not valid TOML (line 1, column 19); Codex's profile bad is not followed"}},
		// What the sandbox can write does not steer the key: a config.toml or a
		// profile in a read-write bind, a shared tool file, devsandbox's own data.
		{name: "codex's config.toml in an rw bind", tools: codexKey + "[sandbox]\nrw_binds = [\"$ROOT/shared\"]\n",
			files: map[string]string{"$ROOT/shared/codex/config.toml": gw + "env_key = \"OPENAI_API_KEY\"\n"},
			env:   []string{"OPENAI_API_KEY=sk-12345678", "CODEX_HOME=$ROOT/shared/codex"},
			want:  []config.Credential{openai("api.openai.com")},
			warns: []string{"tools.codex.key: setting cannot be read: $ROOT/shared/codex/config.toml: it lies in $ROOT/shared (sandbox.rw_binds), where the sandbox can write it; OPENAI_API_KEY is held for api.openai.com"}},
		{name: "codex's config.toml links into a host mount", tools: codexKey + "[sandbox]\nhost_mounts = [\"$ROOT/shared:/mnt/shared\"]\n",
			files: map[string]string{"$ROOT/shared/codex.toml": "openai_base_url = \"https://evil.test/v1\"\n", "$HOME/.codex/config.toml": "->$ROOT/shared/codex.toml"},
			env:   []string{"OPENAI_API_KEY=sk-12345678"},
			want:  []config.Credential{openai("api.openai.com")},
			warns: []string{"tools.codex.key: setting cannot be read: $HOME/.codex/config.toml: it lies in $ROOT/shared (sandbox.host_mounts), where the sandbox can write it; OPENAI_API_KEY is held for api.openai.com"}},
		{name: "codex profile in an rw bind", tools: codexKey + "[sandbox]\nrw_binds = [\"$ROOT/shared\"]\n",
			files: map[string]string{"$ROOT/shared/p.toml": "openai_base_url = \"https://evil.test/v1\"\n", "$HOME/.codex/config.toml": "model = \"o3\"\n", "$HOME/.codex/p.config.toml": "->$ROOT/shared/p.toml"},
			env:   []string{"OPENAI_API_KEY=sk-12345678"},
			want:  []config.Credential{openai("api.openai.com")},
			warns: []string{"tools.codex.key: setting cannot be read: $HOME/.codex/p.config.toml: it lies in $ROOT/shared (sandbox.rw_binds), where the sandbox can write it; Codex's profile p is not followed"}},
		{name: "codex's config.toml links to a file the sandbox shares", tools: codexKey,
			files: map[string]string{"$HOME/.codex/auth.json": "openai_base_url = \"https://evil.test/v1\"\n", "$HOME/.codex/config.toml": "->$HOME/.codex/auth.json"},
			env:   []string{"OPENAI_API_KEY=sk-12345678"},
			want:  []config.Credential{openai("api.openai.com")},
			warns: []string{"tools.codex.key: setting cannot be read: $HOME/.codex/config.toml: it lies in $HOME/.codex/auth.json (shared read-write with the sandbox by tool codex), where the sandbox can write it; OPENAI_API_KEY is held for api.openai.com"}},
		{name: "codex's config.toml in devsandbox's data", tools: codexKey,
			files: map[string]string{"$HOME/.local/share/devsandbox/app-x/home/.codex/config.toml": "openai_base_url = \"https://evil.test/v1\"\n"},
			env:   []string{"OPENAI_API_KEY=sk-12345678", "CODEX_HOME=$HOME/.local/share/devsandbox/app-x/home/.codex"},
			want:  []config.Credential{openai("api.openai.com")},
			warns: []string{"tools.codex.key: setting cannot be read: $HOME/.local/share/devsandbox/app-x/home/.codex/config.toml: it lies in $HOME/.local/share/devsandbox (devsandbox's data: the sandbox homes), where the sandbox can write it; OPENAI_API_KEY is held for api.openai.com"}},
		{name: "codex and qwen share OPENAI_API_KEY", tools: "[tools.codex]\nkey = \"proxy\"\n[tools.qwen]\nkey = \"proxy\"\n",
			env:   []string{"OPENAI_API_KEY=sk-12345678", "OPENAI_BASE_URL=https://dashscope.aliyuncs.com/compatible-mode/v1"},
			want:  []config.Credential{openai("api.openai.com"), openai("dashscope.aliyuncs.com")},
			warns: []string{"tools.codex.key: OPENAI_BASE_URL is set on the host, but codex does not read it: its key is held for api.openai.com, where codex sends it"}},
		{name: "codex and qwen, one host", tools: "[tools.codex]\nkey = \"proxy\"\n[tools.qwen]\nkey = \"proxy\"\n",
			env:  []string{"OPENAI_API_KEY=sk-12345678"},
			want: []config.Credential{openai("api.openai.com")}},
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
		// An unknown tool is wrong on any host: named by file, line and key, with the
		// tools there are and the fix.
		{name: "unknown tool", tools: "[tools.nosuch]\nkey = \"proxy\"\n", class: config.ErrInvalid,
			err: `invalid configuration: CONFIG:1: tools.nosuch: there is no tool "nosuch"; the tools are aider, amp, cargo, claude, codex, copilot, crush, cursor, gemini, gh, git, go, goose, mise, node, nvim, oh-my-zsh, opencode, pi, powerlevel10k, python, qwen, shell, ssh, starship, tmux, zellij (` + "`devsandbox tools list`" + ` describes them): correct the name, or remove the table`},
		{name: "unknown tool, secrets withheld", tools: "[sandbox]\nmode = \"enforce\"\n\n[tools.claud]\nsecrets = false\n", class: config.ErrInvalid,
			err: `invalid configuration: CONFIG:4: tools.claud: there is no tool "claud"; the tools are aider,`},
		{name: "unknown tool, dotted keys", tools: "tools.nosuch.enabled = true\n", class: config.ErrInvalid,
			err: `invalid configuration: CONFIG:1: tools.nosuch: there is no tool "nosuch"`},
		// The setting is wrong on any host: an invalid configuration, named by its file and key.
		{name: "a tool without keys", tools: "[tools.git]\nkey = \"proxy\"\n", class: config.ErrInvalid,
			err: `invalid configuration: CONFIG: tools.git.key = "proxy": git has no API key for the proxy to hold (the tools that have one: claude, codex, copilot, crush, gemini, goose, pi, qwen); remove the setting, or pass git's credentials with [[proxy.credentials]]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			ex := func(s string) string { return f.expand(nil, s)[0] }
			writeFile(t, f.home+"/.config/devsandbox/config.toml", ex(tt.tools+tt.creds))
			for p, content := range tt.files {
				if target, ok := strings.CutPrefix(content, "->"); ok {
					symlink(t, ex(target), ex(p))
				} else {
					writeFile(t, ex(p), content)
				}
			}
			var env []string
			for _, e := range tt.env {
				env = append(env, ex(e))
			}
			for i := range tt.warns {
				tt.warns[i] = ex(tt.warns[i])
			}
			cfg := f.load(t, env...)
			before := slices.Clone(cfg.Proxy.Credentials)
			got, held, warns, err := ToolKeys(cfg, tools.Default(), ToolHost(cfg.Host, probe(f.proj), f.proj))
			// No key's value appears in what ToolKeys says.
			for _, e := range env {
				if n, v, _ := strings.Cut(e, "="); strings.HasSuffix(n, "_KEY") || strings.HasSuffix(n, "_TOKEN") {
					if strings.Contains(strings.Join(warns, "\n"), v) || err != nil && strings.Contains(err.Error(), v) {
						t.Errorf("the value of %s appears in a warning or error: %q %v", n, warns, err)
					}
				}
			}
			if tt.err != "" {
				tt.err = ex(strings.ReplaceAll(tt.err, "CONFIG", f.home+"/.config/devsandbox/config.toml"))
				class := tt.class
				if class == nil {
					class = ErrConfig
				}
				if !errors.Is(err, class) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %v with %q", err, class, tt.err)
				}
				if class != ErrConfig && errors.Is(err, ErrConfig) {
					t.Fatalf("error %v: not a host's, yet it says the configuration does not fit this host", err)
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
			for i, h := range held {
				if c := got.Proxy.Credentials[len(before)+i]; h.Env != c.ValueEnv || h.Host != c.Host || h.Header != c.Header {
					t.Errorf("held[%d] %+v is not credential %+v", i, h, c)
				}
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
	cfg, _, _, err := ToolKeys(cfg, tools.Default(), ToolHost(cfg.Host, probe(f.proj), f.proj))
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

// TestBuildHoldsSharedKey: a key two tools send to different hosts (codex to
// api.openai.com, qwen to its OPENAI_BASE_URL) is held for each, with one placeholder
// in the sandbox that both credentials swap; the key report names each tool with its
// host.
func TestBuildHoldsSharedKey(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.home+"/.config/devsandbox/config.toml", "[tools.codex]\nenabled = true\nkey = \"proxy\"\n[tools.qwen]\nenabled = true\nkey = \"proxy\"\n")
	cfg := f.load(t, "OPENAI_API_KEY=sk-12345678", "OPENAI_BASE_URL=https://dashscope.aliyuncs.com/compatible-mode/v1")
	th := ToolHost(cfg.Host, probe(f.proj), f.proj)
	cfg, held, _, err := ToolKeys(cfg, tools.Default(), th)
	if err != nil {
		t.Fatal(err)
	}
	wantHeld := []HeldKey{{Tool: "codex", Env: "OPENAI_API_KEY", Host: "api.openai.com", Header: "Authorization"},
		{Tool: "qwen", Env: "OPENAI_API_KEY", Host: "dashscope.aliyuncs.com", Header: "Authorization"}}
	if !slices.Equal(held, wantHeld) {
		t.Errorf("held %+v, want %+v", held, wantHeld)
	}
	p, _ := f.build(t, cfg)
	var got []string
	for _, c := range p.Proxy.Credentials {
		got = append(got, c.Name+" "+c.ValueEnv+" "+c.Host+" "+c.PlaceholderVar)
	}
	want := []string{"OPENAI_API_KEY OPENAI_API_KEY api.openai.com DEVSANDBOX_PLACEHOLDER_0", "OPENAI_API_KEY OPENAI_API_KEY dashscope.aliyuncs.com DEVSANDBOX_PLACEHOLDER_0"}
	equalLines(t, "proxy credentials", got, want)
	var secrets []string
	for _, s := range p.Secrets {
		secrets = append(secrets, s.Name+" "+s.EnvSource)
	}
	equalLines(t, "secrets", secrets, []string{"OPENAI_API_KEY DEVSANDBOX_PLACEHOLDER_0"})
	places := KeyPlaces(cfg, tools.Default(), th)
	wantPlaces := []KeyPlace{{Tool: "codex, qwen", Env: "OPENAI_API_KEY", Where: "outside",
		Detail: "held by the proxy, which sets Authorization toward api.openai.com (codex) and dashscope.aliyuncs.com (qwen); the sandbox's OPENAI_API_KEY is a placeholder"}}
	if !slices.Equal(places, wantPlaces) {
		t.Errorf("key places %+v, want %+v", places, wantPlaces)
	}
}

// TestKeyPlacesNamesEachTool: doctor's line for a key several tools have the proxy
// hold names each tool with the host(s) it sends the key to when they differ; a key
// one tool holds, or several hold for the same host, keeps the single-tool line, and
// a key a [[proxy.credentials]] entry holds names that entry's host alone.
func TestKeyPlacesNamesEachTool(t *testing.T) {
	const placeholder = "; the sandbox's OPENAI_API_KEY is a placeholder"
	proxyKey := func(names ...string) string {
		var b strings.Builder
		for _, n := range names {
			b.WriteString("[tools." + n + "]\nenabled = true\nkey = \"proxy\"\n")
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, config string
		env          []string
		want         KeyPlace
	}{
		{"one tool", proxyKey("codex"), nil,
			KeyPlace{Tool: "codex", Env: "OPENAI_API_KEY", Where: "outside", Detail: "held by the proxy, which sets Authorization toward api.openai.com" + placeholder}},
		{"two tools, one host", proxyKey("codex", "qwen"), nil,
			KeyPlace{Tool: "codex", Env: "OPENAI_API_KEY", Where: "outside", Detail: "held by the proxy, which sets Authorization toward api.openai.com" + placeholder}},
		{"two tools, two hosts", proxyKey("codex", "qwen"), []string{"OPENAI_BASE_URL=https://dashscope.aliyuncs.com/compatible-mode/v1"},
			KeyPlace{Tool: "codex, qwen", Env: "OPENAI_API_KEY", Where: "outside", Detail: "held by the proxy, which sets Authorization toward api.openai.com (codex) and dashscope.aliyuncs.com (qwen)" + placeholder}},
		{"four tools, three hosts", proxyKey("codex", "crush", "goose", "qwen"), []string{"OPENAI_BASE_URL=https://dashscope.aliyuncs.com/compatible-mode/v1", "OPENAI_HOST=https://llm.example.com"},
			KeyPlace{Tool: "codex, crush, goose, qwen", Env: "OPENAI_API_KEY", Where: "outside",
				Detail: "held by the proxy, which sets Authorization toward api.openai.com (codex, crush), llm.example.com (goose) and dashscope.aliyuncs.com (qwen)" + placeholder}},
		{"a credential entry", proxyKey("codex", "qwen") + "[proxy]\nmitm = true\n[[proxy.credentials]]\nhost = \"llm.example.com\"\nheader = \"Authorization\"\nvalue_env = \"OPENAI_API_KEY\"\nformat = \"Bearer {}\"\n",
			[]string{"OPENAI_BASE_URL=https://dashscope.aliyuncs.com/compatible-mode/v1"},
			KeyPlace{Tool: "codex", Env: "OPENAI_API_KEY", Where: "outside", Detail: "held by the proxy, which sets Authorization toward llm.example.com"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			writeFile(t, f.home+"/.config/devsandbox/config.toml", tc.config)
			cfg := f.load(t, append([]string{"OPENAI_API_KEY=sk-12345678"}, tc.env...)...)
			th := ToolHost(cfg.Host, probe(f.proj), f.proj)
			cfg, _, _, err := ToolKeys(cfg, tools.Default(), th)
			if err != nil {
				t.Fatal(err)
			}
			var got []KeyPlace
			for _, kp := range KeyPlaces(cfg, tools.Default(), th) {
				if kp.Env == "OPENAI_API_KEY" {
					got = append(got, kp)
				}
			}
			if !slices.Equal(got, []KeyPlace{tc.want}) {
				t.Errorf("key places\n%+v\nwant\n%+v", got, tc.want)
			}
		})
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
				if cfg, _, _, err = ToolKeys(cfg, tools.Default(), ToolHost(cfg.Host, probe(f.proj), f.proj)); err != nil {
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
	// The project lies in the home: the mask is home-relative, and repeated at its host
	// path (atBothHomes), at the same path here.
	if !slices.Equal(slices.Compact(masks), []string{f.proj + "/.tokens"}) {
		t.Errorf("masks in the hidden directory: %q; want only the hide_paths mask of %s/.tokens", masks, f.proj)
	}
}

// TestLoadDirFollowsCodexFlags: the run's command (config.Flags.Command, devsandbox's
// own argv) reaches Codex's key: a codex command whose -c flag moves openai_base_url
// has the key held there too; another command's -c does nothing.
func TestLoadDirFollowsCodexFlags(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.home+"/.config/devsandbox/config.toml", "[tools.codex]\nkey = \"proxy\"\n")
	env := append(append([]string(nil), f.environ...), "OPENAI_API_KEY=sk-12345678")
	for _, tt := range []struct {
		cmd  []string
		want []string
	}{
		{[]string{"codex", "exec", "-c", "openai_base_url=https://flag.test/v1"}, []string{"api.openai.com", "flag.test"}},
		{[]string{"sh", "-c", "openai_base_url=https://flag.test/v1"}, []string{"api.openai.com"}},
		{nil, []string{"api.openai.com"}},
	} {
		l, err := LoadDir(f.proj, config.Flags{Command: tt.cmd}, env, tools.Default())
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range l.Held {
			got = append(got, h.Host)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%q: the key is held for %q, want %q", tt.cmd, got, tt.want)
		}
	}
}
