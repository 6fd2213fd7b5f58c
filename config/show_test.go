package config

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// A configuration with values from every layer: defaults, the user file, a trusted
// project file, DEVSANDBOX_ISOLATOR and flags.
const (
	showUser = `[sandbox]
mode = "auto"
hide_paths = ["~/.secrets"]
mask_allow = [".env.example"]
[env]
passthrough = ["EDITOR"]
[env.set]
A = "from user"
[secrets]
env = ["GITHUB_TOKEN"]
[tools.git]
enabled = false
[tools."my.tool"]
secrets = false
[proxy]
mitm = true
[[proxy.credentials]]
host = "api.github.com"
header = "Authorization"
value_env = "GITHUB_TOKEN"
format = "Bearer {}"
[docker]
memory = "4g"
`
	showProject = `[sandbox]
mode = "enforce"
read_only = true
writable_dirs = ["build"]
mask_files = ["*.pem"]
[env.set]
B = "from \"project\"\ttab"
[egress]
deny = ["169.254.169.254"]
[docker]
image = "proj:1"
cpus = 2
[krun]
memory_mib = 4096
`
	showSecret = "s3cr3t-value"
)

func showConfig(t *testing.T) (*Config, string) {
	t.Helper()
	home, environ := testHome(t, "DEVSANDBOX_ISOLATOR=docker", "GITHUB_TOKEN="+showSecret)
	writeUserFile(t, home, showUser)
	dir, file, host := project(t, home, environ, showProject)
	mustTrust(t, host, file)
	none, yes := "none", true
	c, _ := mustLoad(t, LoadOptions{Environ: environ, ProjectDir: dir, Flags: Flags{
		Egress: &none, Mounts: []string{"/data:ro"}, Env: []string{"C=flag"}, SecretFiles: []string{"NPM=~/npm"}, KeepContainer: &yes,
	}})
	return c, home
}

// golden compares got, with home written as $HOME, to testdata/name.
func golden(t *testing.T, name, home string, got []byte) {
	t.Helper()
	got = bytes.ReplaceAll(got, []byte(home), []byte("$HOME"))
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test ./config -run %s -update rewrites it):\n%s", path, t.Name(), got)
	}
}

func TestShow(t *testing.T) {
	c, home := showConfig(t)
	var out bytes.Buffer
	if err := Show(c, &out); err != nil {
		t.Fatal(err)
	}
	golden(t, "show.toml.golden", home, out.Bytes())
	checkShown(t, c, out.Bytes())
}

func TestShowDefaults(t *testing.T) {
	home, environ := testHome(t)
	c, _ := mustLoad(t, LoadOptions{Environ: environ})
	var out bytes.Buffer
	if err := Show(c, &out); err != nil {
		t.Fatal(err)
	}
	golden(t, "show-defaults.toml.golden", home, out.Bytes())
	checkShown(t, c, out.Bytes())
}

// checkShown checks that Show's output is a valid config and leaks no host value.
func checkShown(t *testing.T, c *Config, out []byte) {
	t.Helper()
	file := writeFile(t, filepath.Join(t.TempDir(), "shown.toml"), string(out))
	if err := ValidateFile(file, c.Host); err != nil {
		t.Errorf("the output is not a valid config: %v", err)
	}
	if bytes.Contains(out, []byte(showSecret)) {
		t.Error("the output holds a host environment value")
	}
}

func TestShowJSON(t *testing.T) {
	c, home := showConfig(t)
	var out bytes.Buffer
	if err := ShowJSON(c, &out); err != nil {
		t.Fatal(err)
	}
	golden(t, "show.json.golden", home, out.Bytes())
	var m map[string]struct {
		Value  any    `json:"value"`
		Origin string `json:"origin"`
	}
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	// Every origin Load recorded is shown, under the same key.
	for key, origin := range c.Origins {
		if m[key].Origin != origin {
			t.Errorf("%s: origin %q, want %q", key, m[key].Origin, origin)
		}
	}
	if strings.Contains(out.String(), showSecret) {
		t.Error("the output holds a host environment value")
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"plain":         `"plain"`,
		`a"b\c`:         `"a\"b\\c"`,
		"tab\tnl\ncr\r": `"tab\tnl\ncr\r"`,
		"bell\a\x7f":    `"bell\u0007\u007F"`,
		"é ünïcode":     `"é ünïcode"`,
		// What a terminal acts on but TOML allows raw is escaped too.
		"c1\u009b rlo\u202e ls\u2028 tag\U000E0041": `"c1\u009B rlo\u202E ls\u2028 tag\U000E0041"`,
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}
