package planner

import (
	"os"
	"strings"
	"testing"
)

func TestParseYarnRC(t *testing.T) {
	cases := []struct {
		name string
		yml  bool
		in   string
		want []string // nil with ok false: not understood
		ok   bool
	}{
		{"berry plain", true, "yarnPath: .yarn/releases/yarn-4.5.0.cjs\n", []string{".yarn/releases/yarn-4.5.0.cjs"}, true},
		{"berry quoted", true, "nodeLinker: node-modules\nyarnPath: \".yarn/releases/yarn 4.cjs\"\n", []string{".yarn/releases/yarn 4.cjs"}, true},
		{"berry single quoted, comment", true, "yarnPath: './y.cjs' # pinned\n", []string{"./y.cjs"}, true},
		{"berry plugins", true, "plugins:\n  - path: .yarn/plugins/@yarnpkg/plugin-x.cjs\n    spec: \"@yarnpkg/plugin-x\"\n  - .yarn/plugins/y.cjs\nyarnPath: a.cjs\n",
			[]string{".yarn/plugins/@yarnpkg/plugin-x.cjs", ".yarn/plugins/y.cjs", "a.cjs"}, true},
		{"berry plugins mapping on next line", true, "plugins:\n  -\n    path: p.cjs\n    checksum: abc\n", []string{"p.cjs"}, true},
		{"berry nothing named", true, "nodeLinker: pnp\nnpmScopes:\n  x:\n    npmRegistryServer: \"https://r\"\n", nil, true},
		{"berry nested yarnPath is not the key", true, "packageExtensions:\n  yarnPath: x.cjs\n", nil, true},
		{"berry empty", true, "", nil, true},
		{"berry CRLF", true, "yarnPath: y.cjs\r\n", []string{"y.cjs"}, true},
		{"berry flow plugins", true, "plugins: [a.cjs]\n", nil, false},
		{"berry alias", true, "yarnPath: *rel\n", nil, false},
		{"berry block scalar", true, "yarnPath: |\n  y.cjs\n", nil, false},
		{"berry env var", true, "yarnPath: ${YARN_REL}/y.cjs\n", nil, false},
		{"berry empty value", true, "yarnPath:\n", nil, false},
		{"berry escape in quotes", true, "yarnPath: \"a\\\".cjs\"\n", nil, false},
		{"berry odd plugin item", true, "plugins:\n  ? complex\n", nil, false},
		{"berry quoted key", true, "\"yarnPath\": y.cjs\n", []string{"y.cjs"}, true},
		{"yarn1 quoted", false, "yarn-path \"./bin/yarn-1.22.cjs\"\n", []string{"./bin/yarn-1.22.cjs"}, true},
		{"yarn1 plain and others", false, "# yarn lockfile v1\nregistry \"https://r\"\nyarn-path .yarn/releases/yarn-1.22.19.cjs\n", []string{".yarn/releases/yarn-1.22.19.cjs"}, true},
		{"yarn1 yarnPath key", false, "yarnPath \"y.js\"\n", []string{"y.js"}, true},
		{"yarn1 flag form", false, "--yarn-path y.js\n", []string{"y.js"}, true},
		{"yarn1 colon", false, "\"yarn-path\": \"y.js\"\n", []string{"y.js"}, true},
		{"yarn1 colon unquoted", false, "yarn-path: y.js\n", []string{"y.js"}, true},
		{"yarn1 no value", false, "yarn-path\n", nil, false},
		{"yarn1 nothing named", false, "save-prefix \"~\"\n", nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := parseYarnRC([]byte(c.in), c.yml)
			if ok != c.ok || strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("parseYarnRC(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
			}
		})
	}
}

// TestYarnNamedFilesReadOnly: the release and plugins a yarn rc file names are
// read-only when they lie in the project, with each directory between a mount point;
// a release outside the project, or reached through a link leaving it, is not
// devsandbox's; a missing release is a tripwire; an rc file devsandbox cannot parse
// makes .yarn/releases and .yarn/plugins read-only whole, with a warning; one in a
// sub-directory names paths from its own directory.
func TestYarnNamedFilesReadOnly(t *testing.T) {
	f := newFixture(t)
	gitRepo(t, f.proj)
	writeFile(t, f.proj+"/.yarnrc.yml", "yarnPath: .yarn/releases/yarn-4.cjs\nplugins:\n  - path: .yarn/plugins/p.cjs\n  - ../../outside.cjs\n  - link.cjs\n")
	writeFile(t, f.proj+"/.yarn/releases/yarn-4.cjs", "x")
	writeFile(t, f.proj+"/.yarn/plugins/p.cjs", "x")
	if err := os.Symlink("/etc/hostname", f.proj+"/link.cjs"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, f.proj+"/old/.yarnrc", "yarn-path \"./bin/missing.js\"\n") // old/bin does not exist either
	writeFile(t, f.proj+"/odd/.yarnrc.yml", "yarnPath: ${REL}\n")
	writeFile(t, f.proj+"/web/.yarnrc.yml", "yarnPath: ../.yarn/releases/yarn-4.cjs\n") // the top's release again: one bind
	writeFile(t, f.proj+"/odd/.yarn/releases/r.cjs", "x")
	p, warns := f.build(t, f.load(t))
	var got []string
	for _, l := range mountLines(p.Mounts) {
		if strings.Contains(l, "yarn") {
			got = append(got, l)
		}
	}
	equalLines(t, "mounts", got, f.expand(p,
		"bind rw $PROJ/.yarn -> $PROJ/.yarn (holds files run by tools on the host)",
		"bind rw $PROJ/.yarn/releases -> $PROJ/.yarn/releases (holds files run by tools on the host)",
		"bind rw $PROJ/.yarn/plugins -> $PROJ/.yarn/plugins (holds files run by tools on the host)",
		"bind rw $PROJ/odd/.yarn -> $PROJ/odd/.yarn (holds files run by tools on the host)",
		"bind ro $PROJ/.yarnrc.yml -> $PROJ/.yarnrc.yml (run by tools on the host)",
		"bind ro $PROJ/.yarn/releases/yarn-4.cjs -> $PROJ/.yarn/releases/yarn-4.cjs (yarn on the host runs it (yarnPath, yarn-path, plugins))",
		"bind ro $PROJ/.yarn/plugins/p.cjs -> $PROJ/.yarn/plugins/p.cjs (yarn on the host runs it (yarnPath, yarn-path, plugins))",
		"bind ro $PROJ/odd/.yarn/releases -> $PROJ/odd/.yarn/releases (yarn on the host runs it (yarnPath, yarn-path, plugins))",
		"bind ro $PROJ/odd/.yarnrc.yml -> $PROJ/odd/.yarnrc.yml (run by tools on the host)",
		"bind ro $PROJ/old/.yarnrc -> $PROJ/old/.yarnrc (run by tools on the host)",
		"bind ro $PROJ/web/.yarnrc.yml -> $PROJ/web/.yarnrc.yml (run by tools on the host)",
	))
	var tw []string
	for _, w := range p.Tripwires {
		if w.Why == yarnNamedWhy {
			tw = append(tw, w.Path)
		}
	}
	equalLines(t, "tripwires", tw, []string{f.proj + "/old/bin/missing.js"})
	if n := strings.Count(strings.Join(warns, "\n"), "odd/.yarnrc.yml: devsandbox cannot read it"); n != 1 {
		t.Errorf("want one warning for odd/.yarnrc.yml, got %q", warns)
	}
}
