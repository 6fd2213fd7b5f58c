package planner

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/internal/rawfile"
	"github.com/devsandbox/devsandbox/isolator"
)

// TestHostExecutedNamesFromMiseVars: the names a host's mise variables make mise read
// are added to the fixed list, relative to the project; a name outside the project,
// or a glob in a directory, is refused with a warning; a name the fixed list already
// covers, and an absolute path outside the project, add nothing.
func TestHostExecutedNamesFromMiseVars(t *testing.T) {
	const dir = "/src/p"
	cases := []struct {
		name      string
		vars      map[string]string
		want      []string
		wantWarns []string // each a substring of one warning, in order
	}{
		{name: "none set", vars: map[string]string{"PATH": "/bin"}},
		{name: "default config name", vars: map[string]string{"MISE_DEFAULT_CONFIG_FILENAME": "tools.toml"}, want: []string{"tools.toml"}},
		{name: "override list with a directory, a glob and empty elements",
			vars: map[string]string{"MISE_OVERRIDE_CONFIG_FILENAMES": ":cfg/dev.toml::env/*.toml:"},
			want: []string{"cfg/dev.toml", "env/*.toml"}},
		{name: "tool-versions names", vars: map[string]string{"MISE_DEFAULT_TOOL_VERSIONS_FILENAME": ".versions", "MISE_OVERRIDE_TOOL_VERSIONS_FILENAMES": "a.tv:b/c.tv"},
			want: []string{".versions", "a.tv", "b/c.tv"}},
		{name: "none reads no tool-versions file", vars: map[string]string{"MISE_OVERRIDE_TOOL_VERSIONS_FILENAMES": "none"}},
		{name: "covered by the fixed list", vars: map[string]string{"MISE_OVERRIDE_CONFIG_FILENAMES": "mise.toml:mise.ci.toml:.idea/mise.toml:./.mise.toml"}},
		{name: "a profile with a slash", vars: map[string]string{"MISE_ENV": "ci,x/y"},
			want: []string{".config/mise.x/y.local.toml", ".config/mise.x/y.toml", ".config/mise/config.x/y.local.toml", ".config/mise/config.x/y.toml",
				".mise.x/y.local.toml", ".mise.x/y.toml", ".mise/config.x/y.local.toml", ".mise/config.x/y.toml",
				"mise.x/y.local.toml", "mise.x/y.toml", "mise/config.x/y.local.toml", "mise/config.x/y.toml"}},
		{name: "absolute inside and outside the project", vars: map[string]string{
			"MISE_OVERRIDE_CONFIG_FILENAMES": "/src/p/deploy/mise.toml:/etc/mise/x.toml:/src/p",
			"MISE_GLOBAL_CONFIG_FILE":        "/src/p/dotfiles/mise/config.toml", "MISE_CONFIG_DIR": "/home/u/.config/mise"},
			want: []string{"deploy/mise.toml", "dotfiles/mise/config.toml"}},
		{name: "relative global file is no project name", vars: map[string]string{"MISE_CONFIG_FILE": "x.toml"}},
		{name: "outside the project or a glob in a directory", vars: map[string]string{
			"MISE_DEFAULT_CONFIG_FILENAME": "../shared.toml", "MISE_OVERRIDE_CONFIG_FILENAMES": "a/../../b.toml:.:*/m.toml:ok.toml"},
			want:      []string{"ok.toml"},
			wantWarns: []string{`MISE_DEFAULT_CONFIG_FILENAME names "../shared.toml"`, `"a/../../b.toml"`, `names "."`, `"*/m.toml", a glob in a directory`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			names, warns := hostExecutedNames(c.vars, dir, nil)
			if got := names[:len(hostExecuted)]; strings.Join(got, "\n") != strings.Join(hostExecuted, "\n") {
				t.Fatalf("the fixed list changed: %q", got)
			}
			equalLines(t, "added names", names[len(hostExecuted):], c.want)
			if len(warns) != len(c.wantWarns) {
				t.Fatalf("warnings %q, want %d like %q", warns, len(c.wantWarns), c.wantWarns)
			}
			for i, w := range c.wantWarns {
				if !strings.Contains(warns[i], w) {
					t.Errorf("warning %d %q, want it to name %q", i, warns[i], w)
				}
			}
		})
	}
}

// TestHostExecutedFilesFromMiseVars: with the host's mise reading other names, the
// project's files under them are read-only and a missing one is a tripwire, as for
// mise.toml; the host's warning is passed on.
func TestHostExecutedFilesFromMiseVars(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.proj+"/cfg/dev.toml", "[env]\n")
	writeFile(t, f.proj+"/env/a.toml", "[env]\n")
	writeFile(t, f.proj+"/.versions", "node path:/opt/n\n")
	writeFile(t, f.proj+"/.miserc.toml", "env = [\"ci\"]\n")
	p, warns := f.build(t, f.load(t, "MISE_OVERRIDE_CONFIG_FILENAMES=cfg/dev.toml:env/*.toml:missing.toml:../up.toml",
		"MISE_DEFAULT_TOOL_VERSIONS_FILENAME=.versions"))
	equalLines(t, "mounts", hostRunLines(p), f.expand(p,
		"bind rw $PROJ/cfg -> $PROJ/cfg (holds files run by tools on the host)",
		"bind rw $PROJ/env -> $PROJ/env (holds files run by tools on the host)",
		"bind ro $PROJ/.miserc.toml -> $PROJ/.miserc.toml (run by tools on the host)",
		"bind ro $PROJ/.versions -> $PROJ/.versions (run by tools on the host)",
		"bind ro $PROJ/cfg/dev.toml -> $PROJ/cfg/dev.toml (run by tools on the host)",
		"bind ro $PROJ/env/a.toml -> $PROJ/env/a.toml (run by tools on the host)",
	))
	tw := map[string]bool{}
	for _, w := range p.Tripwires {
		tw[strings.TrimPrefix(w.Path, f.proj+"/")] = w.Pattern
	}
	for name, pattern := range map[string]bool{"missing.toml": false, "env/*.toml": true, ".config/miserc.toml": false} {
		if pat, ok := tw[name]; !ok || pat != pattern {
			t.Errorf("tripwire %s: present %v, pattern %v; want pattern %v", name, ok, pat, pattern)
		}
	}
	if _, ok := tw["cfg/dev.toml"]; ok {
		t.Errorf("cfg/dev.toml exists, so it is read-only, not a tripwire")
	}
	found := false
	for _, w := range warns {
		found = found || strings.Contains(w, `MISE_OVERRIDE_CONFIG_FILENAMES names "../up.toml"`)
	}
	if !found {
		t.Errorf("no warning for ../up.toml in %q", warns)
	}
}

// TestMisercPaths: mise's early settings files for a project, nearest first, up to
// the home, then the global and system ones (moved by their variables).
func TestMisercPaths(t *testing.T) {
	got := misercPaths(map[string]string{"MISE_SYSTEM_CONFIG_DIR": "/opt/mise", "MISE_CONFIG_DIR": "rel"}, "/home/u/src/p", "/home/u", "/home/u/.config")
	equalLines(t, "paths", got, []string{
		"/home/u/src/p/.miserc.toml", "/home/u/src/p/.config/miserc.toml",
		"/home/u/src/.miserc.toml", "/home/u/src/.config/miserc.toml",
		"/home/u/.miserc.toml",
		"/home/u/.config/mise/miserc.toml", "/opt/mise/miserc.toml",
	})
}

// TestMisercNamesProtected: the names a .miserc.toml gives mise (its own in the
// project, a parent's, the global one) are protected like those of the environment;
// a template or a broken file is warned about, never guessed at.
func TestMisercNamesProtected(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.proj+"/.miserc.toml", "override_config_filenames = [\"deploy/m.toml\"]\nenv = \"qa,x/y\"\n")
	writeFile(t, f.proj+"/deploy/m.toml", "[env]\n")
	writeFile(t, filepath.Dir(f.proj)+"/.miserc.toml", "override_tool_versions_filenames = [\"tools.tv\"]\n")
	writeFile(t, f.proj+"/tools.tv", "node path:/x\n")
	writeFile(t, f.home+"/.config/mise/miserc.toml", "env = [\"{{ env.X }}\"]\n")
	writeFile(t, f.proj+"/.config/miserc.toml", "env = [\n")
	p, warns := f.build(t, f.load(t))
	equalLines(t, "mounts", hostRunLines(p), f.expand(p,
		"bind rw $PROJ/.config -> $PROJ/.config (holds files run by tools on the host)",
		"bind rw $PROJ/deploy -> $PROJ/deploy (holds files run by tools on the host)",
		"bind ro $PROJ/.miserc.toml -> $PROJ/.miserc.toml (run by tools on the host)",
		"bind ro $PROJ/.config/miserc.toml -> $PROJ/.config/miserc.toml (run by tools on the host)",
		"bind ro $PROJ/deploy/m.toml -> $PROJ/deploy/m.toml (run by tools on the host)",
		"bind ro $PROJ/tools.tv -> $PROJ/tools.tv (run by tools on the host)",
	))
	tw := false
	for _, w := range p.Tripwires {
		tw = tw || w.Path == f.proj+"/mise.x/y.toml"
	}
	if !tw {
		t.Errorf("the profile x/y's mise.x/y.toml is no tripwire")
	}
	var template, broken bool
	for _, w := range warns {
		template = template || strings.Contains(w, f.home+"/.config/mise/miserc.toml is a template")
		broken = broken || strings.Contains(w, f.proj+"/.config/miserc.toml is not TOML")
	}
	if !template || !broken {
		t.Errorf("warnings %q: want the template and the broken file named", warns)
	}
}

// hostRunLines are p's mounts of files run by tools on the host, and of the
// directories holding them, as mountLines renders them.
func hostRunLines(p *isolator.Plan) []string {
	var out []string
	for _, l := range mountLines(p.Mounts) {
		if strings.Contains(l, "run by tools on the host)") {
			out = append(out, l)
		}
	}
	return out
}

// TestReadPresent: readMiserc through readPresent and Build's stat cache finds what
// reading every file finds (files, a link to one, a dangling link, a directory where a
// file is looked for), and reads no file a listed directory lacks.
func TestReadPresent(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.proj+"/.miserc.toml", "override_config_filenames = [\"a.toml\"]\n")
	writeFile(t, f.home+"/elsewhere.toml", "env = \"qa\"\n")
	if err := os.Symlink(f.home+"/elsewhere.toml", filepath.Dir(f.proj)+"/.miserc.toml"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.home+"/gone.toml", f.home+"/.miserc.toml"); err != nil {
		t.Fatal(err)
	}
	mkdirs(t, f.home+"/.config/mise/miserc.toml") // a directory
	paths := misercPaths(nil, f.proj, f.home, f.home+"/.config")
	want, wantWarns := readMiserc(os.ReadFile, paths)

	pr := OS(f.proj)
	stats := newStatCache(pr.Lstat, pr.Stat)
	stats.listDirs(listNames, f.home, f.home+"/.config", f.proj)
	pr.Lstat, pr.Stat = stats.Lstat, stats.Stat
	var read []string
	pr.ReadRegular = func(p string, limit int64, follow bool) ([]byte, error) {
		read = append(read, p)
		return rawfile.ReadRegular(p, limit, follow)
	}
	got, warns := readMiserc(pr.readPresent, paths)
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(warns, wantWarns) {
		t.Errorf("readPresent found %+v %q, reading every file %+v %q", got, warns, want, wantWarns)
	}
	// Only what exists, as a file, a link or a directory, is read.
	equalLines(t, "files read", read, []string{
		f.proj + "/.miserc.toml", filepath.Dir(f.proj) + "/.miserc.toml",
		f.home + "/.miserc.toml", f.home + "/.config/mise/miserc.toml",
	})
}
