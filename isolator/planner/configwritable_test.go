package planner

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/tools"
)

// What a --config file needs trust in: the project, the list Build binds read-write
// (sandboxWritable: the config's rw_binds and read-write host_mounts among them), and
// the other projects devsandbox has run; not a read-only bind, nor a sibling sharing a
// prefix.
func TestConfigWritable(t *testing.T) {
	f := newFixture(t)
	mkdirs(t, f.root+"/rw", f.root+"/mnt", f.root+"/ro", f.root+"/other")
	writeFile(t, f.home+"/.config/devsandbox/config.toml", f.expand(nil, `[sandbox]
rw_binds = ["$ROOT/rw", "$HOME/.config"]
ro_binds = ["$ROOT/ro"]
host_mounts = ["$ROOT/mnt:/mnt/x"]
hide_paths = ["$ROOT/rw/hidden"]
`)[0])
	mkdirs(t, f.root+"/rw/hidden")
	_, other := projectName(f.root + "/other")
	mkdirs(t, f.home+"/.local/share/devsandbox/"+other+"/home")
	cfg := f.load(t)
	in := configWritable(tools.Default(), probe(f.proj), f.proj)(cfg)
	for p, want := range map[string]string{
		f.proj + "/dev.toml":                        "the project",
		f.root + "/rw/dev.toml":                     "sandbox.rw_binds",
		f.root + "/mnt/a/b":                         "sandbox.host_mounts",
		f.root + "/other/x":                         "it lies in " + f.root + "/other: another project devsandbox has run (" + other + ")",
		f.root + "/other/a/b/c":                     "it lies in " + f.root + "/other: another project",
		f.home + "/.local/state/devsandbox/p/tmp/x": "devsandbox's state",
		f.root + "/ro/dev.toml":                     "",
		f.root + "/rwx/dev.toml":                    "",
		f.root + "/dev.toml":                        "",
		// In the binds, but in what they mask: devsandbox's configuration, a hidden path.
		f.home + "/.config/devsandbox/other.toml": "",
		f.root + "/rw/hidden/dev.toml":            "",
		f.home + "/.config/other/dev.toml":        "sandbox.rw_binds",
	} {
		why, ok := in(p)
		if ok != (want != "") || !strings.Contains(why, want) {
			t.Errorf("%s: %q, %v; want %q", p, why, ok, want)
		}
	}
}

// LoadDir asks for trust of a --config file in a directory the same file binds
// read-write, naming where it lies and the fix.
func TestLoadDirConfigFileInRWBind(t *testing.T) {
	f := newFixture(t)
	mkdirs(t, f.root+"/rw")
	file := f.root + "/rw/dev.toml"
	writeFile(t, file, f.expand(nil, "[sandbox]\nrw_binds = [\"$ROOT/rw\"]\n")[0])
	_, err := LoadDir(f.proj, config.Flags{ConfigFile: file}, f.environ, tools.Default())
	if !errors.Is(err, config.ErrUntrustedConfigFile) || !strings.Contains(err.Error(), "it lies in "+filepath.Join(f.root, "rw")+": sandbox.rw_binds") ||
		!strings.Contains(err.Error(), "`devsandbox config trust "+file+"`") {
		t.Fatalf("got %v, want ErrUntrustedConfigFile naming the bind and the fix", err)
	}
}
