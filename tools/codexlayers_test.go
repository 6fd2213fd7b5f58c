package tools

import (
	"io/fs"
	"slices"
	"testing"
)

// codexHost is a host whose files are fs, read as readTOML reads them, with cmd the
// run's command and writable the paths the sandbox can write.
func codexHost(files map[string]string, cmd []string, writable ...string) Host {
	h := fakeHost(files)
	h.Command = cmd
	h.ReadHead = func(p string, n int) ([]byte, error) {
		c, ok := files[p]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return []byte(c)[:min(n, len(c))], nil
	}
	h.Writable = func() []WritablePath {
		var out []WritablePath
		for _, w := range writable {
			out = append(out, WritablePath{Path: w, Why: "a test's"})
		}
		return out
	}
	return h
}

// Codex's system layer (/etc/codex/config.toml, under config.toml), its managed
// layer (/etc/codex/managed_config.toml, over everything) and the -c flags of the
// run's own command, when it runs codex, move the key or add providers that send it:
// each is followed as Codex merges them, and none that the sandbox could write.
func TestCodexEndpointsLayers(t *testing.T) {
	const user = home + "/.codex/config.toml"
	gw := "[model_providers.gw]\nbase_url = \"https://gw.test/v1\"\n"
	tests := []struct {
		name     string
		files    map[string]string
		cmd      []string
		writable []string
		want     []string // the endpoints' URLs ("" is Codex's default)
		warns    []string
	}{
		{name: "system openai_base_url",
			files: map[string]string{codexSystemConfig: "openai_base_url = \"https://sys.test/v1\"\n"},
			want:  []string{"https://sys.test/v1"}},
		{name: "config.toml over the system layer",
			files: map[string]string{codexSystemConfig: "openai_base_url = \"https://sys.test/v1\"\n", user: "openai_base_url = \"https://user.test/v1\"\n"},
			want:  []string{"https://user.test/v1"}},
		{name: "a provider split across the system layer and config.toml",
			files: map[string]string{codexSystemConfig: gw, user: "[model_providers.gw]\nenv_key = \"OPENAI_API_KEY\"\n"},
			want:  []string{"", "https://gw.test/v1"}},
		{name: "managed openai_base_url",
			files: map[string]string{codexManagedConfig: "openai_base_url = \"https://managed.test/v1\"\n"},
			want:  []string{"", "https://managed.test/v1"}},
		// Without the profile, gw has no base_url: Codex's default.
		{name: "managed provider over a profile's",
			files: map[string]string{home + "/.codex/p.config.toml": gw, codexManagedConfig: "[model_providers.gw]\nrequires_openai_auth = true\n"},
			want:  []string{"", codexDefaultBase, "https://gw.test/v1"}},
		{name: "-c flags",
			files: map[string]string{user: gw + "env_key = \"OPENAI_API_KEY\"\n"},
			cmd: []string{"/usr/local/bin/codex", "-c", "openai_base_url=https://flag.test/v1", "exec",
				"--config=model_providers.gw.base_url=\"https://gw2.test/v1\"",
				"-cmodel_providers.x={ base_url = \"https://x.test\", env_key = \"OPENAI_API_KEY\" }",
				"-c", "novalue", "--", "-c", "openai_base_url=https://after.test"},
			want:  []string{"", "https://gw.test/v1", "https://flag.test/v1", "https://gw2.test/v1", "https://x.test"},
			warns: []string{"the -c flag at argument 6 of the codex command is not KEY=VALUE; it is not followed"}},
		{name: "-c flags of another command",
			cmd:  []string{"sh", "-c", "openai_base_url=https://flag.test/v1"},
			want: []string{""}},
		{name: "-c flags over a profile",
			files: map[string]string{home + "/.codex/p.config.toml": gw},
			cmd:   []string{"codex", "--profile", "p", "-c", "model_providers.gw.env_key=OPENAI_API_KEY"},
			want:  []string{"", codexDefaultBase, "https://gw.test/v1"}},
		{name: "system layer the sandbox can write",
			files:    map[string]string{codexSystemConfig: "openai_base_url = \"https://evil.test/v1\"\n", codexManagedConfig: "openai_base_url = \"https://evil.test/v1\"\n"},
			writable: []string{"/etc/codex"},
			want:     []string{""},
			warns: []string{"setting cannot be read: /etc/codex/config.toml: it lies in /etc/codex (a test's), where the sandbox can write it; it is not followed",
				"setting cannot be read: /etc/codex/managed_config.toml: it lies in /etc/codex (a test's), where the sandbox can write it; it is not followed"}},
		{name: "system layer that does not parse",
			files: map[string]string{codexSystemConfig: "openai_base_url = https://sys.test\n", user: "openai_base_url = \"https://user.test/v1\"\n"},
			want:  []string{"https://user.test/v1"},
			warns: []string{"setting cannot be read: /etc/codex/config.toml: it is not valid TOML (line 1, column 19); it is not followed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eps, warns, err := codexEndpoints(codexHost(tt.files, tt.cmd, tt.writable...), "OPENAI_API_KEY")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range eps {
				if !slices.Contains(got, e.URL) {
					got = append(got, e.URL)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("endpoints %q (%+v), want %q", got, eps, tt.want)
			}
			if !slices.Equal(warns, tt.warns) {
				t.Errorf("warnings %q, want %q", warns, tt.warns)
			}
		})
	}
}
