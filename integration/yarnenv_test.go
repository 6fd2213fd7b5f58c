//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostYarnEnvFiles: the host user's environment changes what yarn (berry) reads
// and runs. YARN_RC_FILENAME replaces .yarnrc.yml as the rc file name yarn reads in
// every directory up to /; YARN_YARN_PATH is the release every yarn command runs
// instead of itself and YARN_PLUGINS (';'-separated) the plugins it loads, a relative
// path resolved in the directory yarn runs in; the variables' names are matched in
// any case. So, as for .yarnrc.yml (TestHostYarnFiles): an rc file under the
// variable's name and what it names, the release and the plugins the variables name
// are read-only and cannot be renamed away, and such a file the sandbox creates (top
// directory or a sub-directory) is reported. A release that is a symbolic link in
// .yarn/releases cannot be retargeted or removed either (its directory is
// read-only). Before, the sandbox could rewrite any of them, and the user's next
// `yarn` on the host ran it.
func TestHostYarnEnvFiles(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		existing := map[string]string{
			".ci-yarnrc.yml":           "yarnPath: rel/yarn-rc.cjs\n",
			"rel/yarn-rc.cjs":          "console.log('release the env rc names')\n",
			"tools/yarn-env.cjs":       "console.log('YARN_YARN_PATH')\n",
			".yarn/env-plugin.cjs":     "module.exports = {}\n",
			"sub/.yarn/env-plugin.cjs": "module.exports = {}\n",
			"sub/.ci-yarnrc.yml":       "yarnPath: y.cjs\n",
			"sub/y.cjs":                "console.log('sub release')\n",
			"plug/abs.cjs":             "module.exports = {}\n",
			".yarnrc.yml":              "yarnPath: .yarn/releases/yarn-link.cjs\n",
			"store/yarn-4.cjs":         "console.log('linked release')\n",
		}
		for f, c := range existing {
			p.write("proj/"+f, c)
		}
		p.mkdir("proj/.yarn/releases")
		link := p.path("proj/.yarn/releases/yarn-link.cjs")
		if err := os.Symlink("../../store/yarn-4.cjs", link); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(link, it.uid, it.gid); err != nil {
			t.Fatal(err)
		}
		script := ""
		for f := range existing {
			script += fmt.Sprintf("echo x >> %s 2>/dev/null && echo WROTE %s; ", f, f)
		}
		for _, d := range []string{"rel", "tools", ".yarn", "sub", "sub/.yarn", "plug", "store"} {
			script += fmt.Sprintf("mv %s %s.moved 2>/dev/null && echo WROTE %s by rename; ", d, d, d)
		}
		script += `echo evil > e.cjs; mv -f e.cjs tools/yarn-env.cjs 2>/dev/null && echo WROTE release by replace; `
		script += `ln -sfn ../../e.cjs .yarn/releases/yarn-link.cjs 2>/dev/null; [ "$(readlink .yarn/releases/yarn-link.cjs)" = ../../store/yarn-4.cjs ] || echo WROTE the release link; `
		script += `rm -f .yarn/releases/yarn-link.cjs 2>/dev/null; [ -L .yarn/releases/yarn-link.cjs ] || echo REMOVED the release link; `
		created := []string{"sub2/.ci-yarnrc.yml", "deep/er/.ci-yarnrc.yml", "missing-plugin.cjs", "sub3/.yarn/env-plugin.cjs"}
		for _, f := range created {
			script += fmt.Sprintf("mkdir -p %s && echo 'yarnPath: evil.cjs' > %s; ", filepath.Dir(f), f)
		}
		env := baseEnv("YARN_RC_FILENAME=.ci-yarnrc.yml", "YARN_YARN_PATH="+filepath.Join(p.dir, "tools/yarn-env.cjs"),
			"yarn_plugins=.yarn/env-plugin.cjs;missing-plugin.cjs;"+filepath.Join(p.dir, "plug/abs.cjs"))
		out := runReportedEnv(t, p, iso, env, script, created)
		if strings.Contains(out, "WROTE") || strings.Contains(out, "REMOVED") {
			t.Errorf("the sandbox changed a file the host's yarn runs:\n%s", out)
		}
		for f, c := range existing {
			if b, err := os.ReadFile(p.path("proj/" + f)); err != nil || string(b) != c {
				t.Errorf("%s on the host: %q, %v", f, b, err)
			}
		}
		if tgt, err := os.Readlink(link); err != nil || tgt != "../../store/yarn-4.cjs" {
			t.Errorf("the release link on the host: %q, %v", tgt, err)
		}
	})
}
