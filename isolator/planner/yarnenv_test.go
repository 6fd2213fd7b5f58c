package planner

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// TestYarnEnvNames: the host's yarn variables (any case) add the rc file name, made
// relative as ppath.join does (an absolute name is one below each directory), and
// the release and plugin paths: relative ones as names in every directory, absolute
// ones inside the project relative to it; outside it they add nothing, and a name
// that leaves the directory yarn runs in is refused with a warning.
func TestYarnEnvNames(t *testing.T) {
	const dir = "/src/p"
	cases := []struct {
		name         string
		vars         map[string]string
		rc, run, top []string
		warns        []string // substrings, in any order
	}{
		{name: "none", vars: map[string]string{"PATH": "/bin", "YARN_CACHE_FOLDER": "/c", "YARN": "x"}},
		{name: "rc file name", vars: map[string]string{"YARN_RC_FILENAME": ".ci-yarnrc.yml"}, rc: []string{".ci-yarnrc.yml"}},
		{name: "rc name with a directory, absolute, any case", vars: map[string]string{"yarn_rc_filename": "/cfg/yarn/rc.yml", "Yarn_Rc_Filename": "./a/rc.yml"},
			rc: []string{"a/rc.yml", "cfg/yarn/rc.yml"}},
		{name: "rc name leaving the directory", vars: map[string]string{"YARN_RC_FILENAME": "../up.yml"}, warns: []string{`YARN_RC_FILENAME names "../up.yml"`}},
		{name: "release and plugins", vars: map[string]string{
			"YARN_YARN_PATH": ".yarn/releases/y.cjs",
			"YARN_PLUGINS":   "p1.cjs;;/src/p/tools/p2.cjs;/opt/p3.cjs;../p4.cjs;/src/p",
		},
			run: []string{".yarn/releases/y.cjs", "p1.cjs"}, top: []string{"tools/p2.cjs"},
			warns: []string{`YARN_PLUGINS names "../p4.cjs"`}},
		{name: "absolute release in the project", vars: map[string]string{"yarn_yarn_path": "/src/p/bin/../tools/y.cjs"}, top: []string{"tools/y.cjs"}},
		{name: "empty values", vars: map[string]string{"YARN_RC_FILENAME": "", "YARN_YARN_PATH": "", "YARN_PLUGINS": ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := yarnEnvNames(c.vars, dir)
			if !slices.Equal(e.rc, c.rc) || !slices.Equal(e.run, c.run) || !slices.Equal(e.top, c.top) {
				t.Errorf("rc %q run %q top %q, want %q %q %q", e.rc, e.run, e.top, c.rc, c.run, c.top)
			}
			if len(e.warns) != len(c.warns) {
				t.Fatalf("warnings %q, want %d like %q", e.warns, len(c.warns), c.warns)
			}
			for _, w := range c.warns {
				if !slices.ContainsFunc(e.warns, func(s string) bool { return strings.Contains(s, w) }) {
					t.Errorf("no warning like %q in %q", w, e.warns)
				}
			}
		})
	}
}

// TestYarnEnvFilesProtected: with the host's yarn variables set, an rc file under
// YARN_RC_FILENAME's name (top and sub-directory) is read-only and so are the
// files it names, resolved from the directory it was found for; YARN_YARN_PATH's
// and YARN_PLUGINS' files are read-only, a missing one is a tripwire, and the names
// reach the project scan (Plan.Subdir). A release that is a link in .yarn/releases
// makes that directory read-only; a link elsewhere is warned about.
func TestYarnEnvFilesProtected(t *testing.T) {
	f := newFixture(t)
	gitRepo(t, f.proj)
	writeFile(t, f.proj+"/cfg/rc.yml", "yarnPath: rel/y.cjs\nplugins:\n  - bin/link.cjs\n")
	writeFile(t, f.proj+"/rel/y.cjs", "x")
	writeFile(t, f.proj+"/sub/cfg/rc.yml", "yarnPath: y.cjs\n")
	writeFile(t, f.proj+"/sub/y.cjs", "x")
	writeFile(t, f.proj+"/tools/env.cjs", "x")
	writeFile(t, f.proj+"/store/y4.cjs", "x")
	writeFile(t, f.proj+"/.yarnrc.yml", "yarnPath: .yarn/releases/link.cjs\n")
	if err := os.MkdirAll(f.proj+"/.yarn/releases", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"/.yarn/releases/link.cjs", "/bin/link.cjs"} {
		if err := os.MkdirAll(f.proj+"/bin", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(f.proj+"/store/y4.cjs", f.proj+l); err != nil {
			t.Fatal(err)
		}
	}
	p, warns := f.build(t, f.load(t, "YARN_RC_FILENAME=cfg/rc.yml", "YARN_YARN_PATH="+f.proj+"/tools/env.cjs", "YARN_PLUGINS=missing.cjs"))
	var got []string
	for _, l := range mountLines(p.Mounts) {
		if strings.HasPrefix(l, "bind ro") {
			got = append(got, l)
		}
	}
	equalLines(t, "read-only binds", got, f.expand(p,
		"bind ro $PROJ/.git/hooks -> $PROJ/.git/hooks (git hooks)",
		"bind ro $PROJ/.git/config -> $PROJ/.git/config (git config)",
		"bind ro $PROJ/.yarnrc.yml -> $PROJ/.yarnrc.yml (run by tools on the host)",
		"bind ro $PROJ/.yarn/releases -> $PROJ/.yarn/releases (yarn on the host runs it (yarnPath, yarn-path, plugins))",
		"bind ro $PROJ/store/y4.cjs -> $PROJ/store/y4.cjs (yarn on the host runs it (yarnPath, yarn-path, plugins))",
		"bind ro $PROJ/cfg/rc.yml -> $PROJ/cfg/rc.yml (run by tools on the host)",
		"bind ro $PROJ/rel/y.cjs -> $PROJ/rel/y.cjs (yarn on the host runs it (yarnPath, yarn-path, plugins))",
		"bind ro $PROJ/tools/env.cjs -> $PROJ/tools/env.cjs (run by tools on the host)",
		"bind ro $PROJ/sub/y.cjs -> $PROJ/sub/y.cjs (yarn on the host runs it (yarnPath, yarn-path, plugins))",
		"bind ro $PROJ/sub/cfg/rc.yml -> $PROJ/sub/cfg/rc.yml (run by tools on the host)",
	))
	var tw []string
	for _, w := range p.Tripwires {
		if strings.Contains(w.Path, "missing") {
			tw = append(tw, w.Path)
		}
	}
	equalLines(t, "tripwires", tw, []string{f.proj + "/missing.cjs"})
	if !slices.Contains(p.Subdir.Names, "cfg/rc.yml") || !slices.Contains(p.Subdir.Names, "missing.cjs") || slices.Contains(p.Subdir.Names, "tools/env.cjs") {
		t.Errorf("the project scan's names: %q", p.Subdir.Names)
	}
	if n := strings.Count(strings.Join(warns, "\n"), f.proj+"/bin/link.cjs, which yarn on the host runs"); n != 1 {
		t.Errorf("want one warning for bin/link.cjs, got %q", warns)
	}
}

// TestYarnLinkedDirs: a directory on the way to a release an rc file names that is a
// symbolic link (.yarn/releases -> …) cannot be bound itself, so the directory
// holding it is read-only whole (with a warning), the link's target in the project
// is walked the same way, and a link in the project's top directory (.yarn -> …),
// which cannot be kept, stops the run naming it.
func TestYarnLinkedDirs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		links   map[string]string // project-relative link -> target
		env     bool              // YARN_YARN_PATH and YARN_PLUGINS name the files, not an rc file
		want    []string          // the yarn binds
		wantErr string
	}{
		{name: "a linked releases directory", links: map[string]string{".yarn/releases": "../store"},
			want: []string{
				"bind ro $PROJ/.yarn -> $PROJ/.yarn (yarn on the host runs it (yarnPath, yarn-path, plugins))",
				"bind ro $PROJ/store/y4.cjs -> $PROJ/store/y4.cjs (yarn on the host runs it (yarnPath, yarn-path, plugins))",
			}},
		{name: "a link to a link", links: map[string]string{".yarn/releases": "../lib/rel", "lib/rel": "../store"},
			want: []string{
				"bind ro $PROJ/.yarn -> $PROJ/.yarn (yarn on the host runs it (yarnPath, yarn-path, plugins))",
				"bind ro $PROJ/lib -> $PROJ/lib (yarn on the host runs it (yarnPath, yarn-path, plugins))",
				"bind ro $PROJ/store/y4.cjs -> $PROJ/store/y4.cjs (yarn on the host runs it (yarnPath, yarn-path, plugins))",
			}},
		{name: "a linked releases directory leading out of the project", links: map[string]string{".yarn/releases": "/usr/share"},
			want: []string{"bind ro $PROJ/.yarn -> $PROJ/.yarn (yarn on the host runs it (yarnPath, yarn-path, plugins))"}},
		{name: "a linked .yarn at the top", links: map[string]string{".yarn": "yarn-dir"}, wantErr: "/.yarn, on the way to"},
		{name: "the environment's release and plugin in a linked releases directory", links: map[string]string{".yarn/releases": "../store"}, env: true,
			want: []string{
				"bind ro $PROJ/.yarn -> $PROJ/.yarn (yarn on the host runs it (yarnPath, yarn-path, plugins))",
				"bind ro $PROJ/store/p.cjs -> $PROJ/store/p.cjs (yarn on the host runs it (yarnPath, yarn-path, plugins))",
				"bind ro $PROJ/store/y4.cjs -> $PROJ/store/y4.cjs (yarn on the host runs it (yarnPath, yarn-path, plugins))",
			}},
		{name: "the environment's release behind a linked .yarn at the top", links: map[string]string{".yarn": "yarn-dir"}, env: true, wantErr: "/.yarn, on the way to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			gitRepo(t, f.proj)
			var vars []string
			if tc.env {
				vars = []string{"YARN_YARN_PATH=" + f.proj + "/.yarn/releases/y4.cjs", "YARN_PLUGINS=.yarn/releases/p.cjs"}
				writeFile(t, f.proj+"/store/p.cjs", "x")
				writeFile(t, f.proj+"/yarn-dir/releases/p.cjs", "x")
			} else {
				writeFile(t, f.proj+"/.yarnrc.yml", "yarnPath: .yarn/releases/y4.cjs\n")
			}
			writeFile(t, f.proj+"/store/y4.cjs", "x")
			writeFile(t, f.proj+"/yarn-dir/releases/y4.cjs", "x")
			for l, tgt := range tc.links {
				if err := os.MkdirAll(filepath.Dir(f.proj+"/"+l), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(tgt, f.proj+"/"+l); err != nil {
					t.Fatal(err)
				}
			}
			cfg := f.load(t, vars...)
			p, warns, err := f.tryBuild(cfg)
			if tc.wantErr != "" {
				if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), f.proj+tc.wantErr) {
					t.Fatalf("error %v; want ErrProtection naming %s", err, f.proj+tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range mountLines(p.Mounts) {
				if strings.Contains(l, "(yarn on the host runs it") {
					got = append(got, l)
				}
			}
			equalLines(t, "yarn binds", got, f.expand(p, tc.want...))
			if !strings.Contains(strings.Join(warns, "\n"), f.proj+"/.yarn/releases, on the way to") {
				t.Errorf("want a warning naming the link, got %q", warns)
			}
		})
	}
}
