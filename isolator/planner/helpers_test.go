package planner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/proxy/ca"
	"github.com/devsandbox/devsandbox/tools"
)

// selfPath is what the fake Probe reports as the devsandbox binary.
const selfPath = "/opt/devsandbox/bin/devsandbox"

// fixture is a host under a temporary directory: root/home/u is the home directory
// and root/home/u/src/app the project (no .git unless a test makes one).
type fixture struct {
	root, home, proj string
	environ          []string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{root: root, home: root + "/home/u", proj: root + "/home/u/src/app"}
	mkdirs(t, f.proj)
	f.environ = []string{"HOME=" + f.home, "USER=u", "PATH=/usr/bin:/bin", "SHELL=/bin/bash"}
	return f
}

// load returns the configuration config.Load makes for the fixture's environment
// plus extra variables.
func (f *fixture) load(t *testing.T, extra ...string) *config.Config {
	t.Helper()
	cfg, _, err := config.Load(config.LoadOptions{Environ: append(append([]string(nil), f.environ...), extra...), UID: 1000, GID: 1000})
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	return cfg
}

// probe is the real file system seen from cwd, with the binary and PATH lookups fixed
// so no tool is detected through the machine running the test.
func probe(cwd string) Probe {
	pr := OS(cwd)
	pr.Executable = func() (string, error) { return selfPath, nil }
	pr.LookPath = func(string) bool { return false }
	pr.MakeProxyCA = makeTestCA
	pr.UnixSockets = nil // the fixture's host has none but those a test lists
	return pr
}

// makeTestCA makes the proxy CA in this process, as devsandbox-proxy does for
// devsandbox (makeCA), which is not beside the test binary.
func makeTestCA(dir, name string) error {
	_, err := ca.LoadOrCreate(dir, name, time.Now())
	return err
}

// build runs Build from the project directory.
func (f *fixture) build(t *testing.T, cfg *config.Config) (*isolator.Plan, []string) {
	t.Helper()
	p, warns, err := f.tryBuild(cfg)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return p, warns
}

func (f *fixture) tryBuild(cfg *config.Config) (*isolator.Plan, []string, error) {
	return Build(cfg, tools.Default(), probe(f.proj), Request{Command: []string{"true"}})
}

// expand replaces $ROOT, $HOME, $PROJ and, given a plan, $DATA (the project's data
// dir) in lines.
func (f *fixture) expand(p *isolator.Plan, lines ...string) []string {
	data := "$DATA"
	if p != nil {
		data = f.home + "/.local/share/devsandbox/" + p.Project.Name
	}
	r := strings.NewReplacer("$DATA", data, "$PROJ", f.proj, "$HOME", f.home, "$ROOT", f.root)
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = r.Replace(l)
	}
	return out
}

// baseMounts are the mounts every Build of the fixture starts with: the sandbox home
// over the host home (the default cache, ~/.cache, lies in it).
var baseMounts = []string{
	"bind rw $DATA/home -> $HOME (sandbox home)",
}

// mountLines renders mounts one per line, every field that matters included, so a
// test compares the whole list.
func mountLines(ms []isolator.Mount) []string {
	var out []string
	for _, m := range ms {
		dst := m.Dest
		if m.HomeRel != "" {
			dst = "~/" + m.HomeRel
		}
		var s string
		switch m.Kind {
		case isolator.Bind:
			mode := "rw"
			if m.ReadOnly {
				mode = "ro"
			}
			if m.Optional {
				mode += ",optional"
			}
			s = fmt.Sprintf("bind %s %s -> %s", mode, m.Source, dst)
		case isolator.MaskFile:
			s = "maskfile " + dst
		case isolator.MaskDir:
			s = "maskdir " + dst
		case isolator.TmpDir:
			s = "tmpdir " + dst
		case isolator.Data:
			s = fmt.Sprintf("data %s %q", dst, m.Content)
		default:
			s = fmt.Sprintf("kind(%d) %s", m.Kind, dst)
		}
		if m.Dest != "" && m.HomeRel != "" {
			s += " [both Dest and HomeRel]"
		}
		out = append(out, s+" ("+m.Why+")")
	}
	return out
}

// equalLines reports the difference between two line lists.
func equalLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\ngot:\n\t%s\nwant:\n\t%s", what, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	mkdirs(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	mkdirs(t, filepath.Dir(link))
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// gitRepo makes dir a plain repository layout with hooks and config (no git needed).
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	mkdirs(t, dir+"/.git/hooks", dir+"/.git/objects", dir+"/.git/refs")
	writeFile(t, dir+"/.git/config", "[core]\n")
	writeFile(t, dir+"/.git/HEAD", "ref: refs/heads/main\n")
}
