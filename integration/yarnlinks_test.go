//go:build integration

package integration

import (
	"os"
	"strings"
	"testing"
)

// TestHostYarnLinkedDirs is the attack on a linked directory on the way to the
// release a committed .yarnrc.yml names (yarnPath: .yarn/releases/yarn-4.cjs): the
// release itself is read-only, but the sandbox retargets the link (.yarn/releases ->
// ../store, to a directory holding its own yarn-4.cjs), or renames the directory
// holding it away and puts its own there, and the user's next `yarn` on the host
// runs the sandbox's release. A linked .yarn/releases makes .yarn read-only whole;
// a linked .yarn in the project's top directory, which cannot be kept, stops the run
// (125) naming the link. Before, the sandbox retargeted both unreported.
func TestHostYarnLinkedDirs(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		t.Run("linked releases", func(t *testing.T) {
			p := newProject(t)
			p.write("proj/.yarnrc.yml", "yarnPath: .yarn/releases/yarn-4.cjs\n")
			p.write("proj/store/yarn-4.cjs", "console.log('the release')\n")
			p.mkdir("proj/.yarn")
			link := p.path("proj/.yarn/releases")
			if err := os.Symlink("../store", link); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(link, it.uid, it.gid); err != nil {
				t.Fatal(err)
			}
			script := `mkdir -p evil && echo "console.log('EVIL')" > evil/yarn-4.cjs
				ln -sfn ../evil .yarn/releases.new 2>/dev/null && mv -T .yarn/releases.new .yarn/releases 2>/dev/null && echo RETARGETED the link
				[ "$(readlink .yarn/releases)" = ../store ] || echo CHANGED the link
				mv .yarn .yarn.moved 2>/dev/null && echo RENAMED .yarn
				echo "console.log('EVIL')" > store/yarn-4.cjs 2>/dev/null && echo WROTE the release
				cat .yarn/releases/yarn-4.cjs`
			r := run(t, p.dir, nil, "", "--isolator="+iso, "--egress=none", "--", "/bin/sh", "-c", script)
			if r.code != 0 || r.stdout != "console.log('the release')\n" || !strings.Contains(r.stderr, link+", on the way to") {
				t.Errorf("the sandbox against a linked .yarn/releases: want exit 0, the release alone and a warning naming the link, got:\n%s", r)
			}
			if tgt, err := os.Readlink(link); err != nil || tgt != "../store" {
				t.Errorf("the link on the host: %q, %v", tgt, err)
			}
			if b, err := os.ReadFile(p.path("proj/.yarn/releases/yarn-4.cjs")); err != nil || string(b) != "console.log('the release')\n" {
				t.Errorf("what the host's yarn runs: %q, %v", b, err)
			}
		})
		t.Run("env-named release and plugin through a linked directory", func(t *testing.T) {
			// No rc file: the host user's YARN_YARN_PATH and YARN_PLUGINS name them.
			p := newProject(t)
			p.write("proj/store/yarn-4.cjs", "console.log('the release')\n")
			p.write("proj/store/plugin.cjs", "module.exports = {}\n")
			p.mkdir("proj/.yarn")
			link := p.path("proj/.yarn/releases")
			if err := os.Symlink("../store", link); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(link, it.uid, it.gid); err != nil {
				t.Fatal(err)
			}
			env := []string{"YARN_YARN_PATH=" + p.path("proj/.yarn/releases/yarn-4.cjs"), "YARN_PLUGINS=.yarn/releases/plugin.cjs"}
			script := `mkdir -p evil && echo "console.log('EVIL')" > evil/yarn-4.cjs
				ln -sfn ../evil .yarn/releases.new 2>/dev/null && mv -T .yarn/releases.new .yarn/releases 2>/dev/null && echo RETARGETED the link
				[ "$(readlink .yarn/releases)" = ../store ] || echo CHANGED the link
				mv .yarn .yarn.moved 2>/dev/null && echo RENAMED .yarn
				cat .yarn/releases/yarn-4.cjs`
			r := run(t, p.dir, env, "", "--isolator="+iso, "--egress=none", "--", "/bin/sh", "-c", script)
			if r.code != 0 || r.stdout != "console.log('the release')\n" || !strings.Contains(r.stderr, link+", on the way to") {
				t.Errorf("the sandbox against a linked .yarn/releases the environment names: want exit 0, the release alone and a warning naming the link, got:\n%s", r)
			}
			if tgt, err := os.Readlink(link); err != nil || tgt != "../store" {
				t.Errorf("the link on the host: %q, %v", tgt, err)
			}
		})
		t.Run("linked .yarn at the top", func(t *testing.T) {
			p := newProject(t)
			p.write("proj/.yarnrc.yml", "yarnPath: .yarn/releases/yarn-4.cjs\n")
			p.write("proj/yarn-dir/releases/yarn-4.cjs", "console.log('the release')\n")
			link := p.path("proj/.yarn")
			if err := os.Symlink("yarn-dir", link); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(link, it.uid, it.gid); err != nil {
				t.Fatal(err)
			}
			script := `mkdir -p evil/releases && echo "console.log('EVIL')" > evil/releases/yarn-4.cjs
				ln -sfn evil .yarn.new && mv -T .yarn.new .yarn && echo RETARGETED the link`
			r := run(t, p.dir, nil, "", "--isolator="+iso, "--egress=none", "--", "/bin/sh", "-c", script)
			if r.code != 125 || strings.Contains(r.stdout, "RETARGETED") || !strings.Contains(r.stderr, link+", on the way to") {
				t.Errorf("the sandbox against a linked .yarn: want exit 125 naming the link, got:\n%s", r)
			}
			if tgt, err := os.Readlink(link); err != nil || tgt != "yarn-dir" {
				t.Errorf("the link on the host: %q, %v", tgt, err)
			}
		})
	})
}
