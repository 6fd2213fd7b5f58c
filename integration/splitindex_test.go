//go:build integration

package integration

import (
	"strings"
	"testing"
)

// TestIndexGitlinkHidden: a nested repository below a directory the mask scan skips
// (node_modules) is found only through the index's gitlinks, so a sandbox that
// keeps the gitlink out of the index file the watch reads must not hide it: moved
// into a split index's shared index (`git update-index --split-index`, which the
// host's git reads whatever core.splitIndex says), or in an index file elsewhere
// that .git/index is made a symlink to (git follows it). Either way `git status` on
// the host would enter the repository and run its core.fsmonitor.
func TestIndexGitlinkHidden(t *testing.T) {
	requireGit(t)
	const nested = `mkdir -p node_modules/lib && cd node_modules/lib && git init -q && git commit -q --allow-empty -m lib
			git config core.fsmonitor 'FSMONITOR' && cd ../..
			HEADID=$(git -C node_modules/lib rev-parse HEAD)
			`
	for _, tc := range []struct{ name, plant, warned string }{
		{"split index", `git update-index --add --cacheinfo 160000,$HEADID,node_modules/lib
			git commit -qm vendor && git update-index --split-index && ls .git/sharedindex.* >/dev/null`, "node_modules/lib/.git"},
		{"index a symlink", `cp .git/index node_modules/.idx
			GIT_INDEX_FILE=node_modules/.idx git update-index --add --cacheinfo 160000,$HEADID,node_modules/lib
			ln -s ../node_modules/.idx .git/index.new && mv -f .git/index.new .git/index`, ".git/index"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachIsolator(t, func(t *testing.T, iso string) {
				p := newProject(t)
				p.newRepo("proj")
				marker := p.path("PWNED")
				script := "set -e\n" + strings.Replace(nested, "FSMONITOR", fsmonitor(marker), 1) + tc.plant + " && echo planted"
				r := run(t, p.dir, gitEnv, "", "--isolator="+iso, "--", "/bin/sh", "-c", script)
				if !strings.Contains(r.stdout, "planted") {
					t.Fatalf("setup inside the sandbox:\n%s", r)
				}
				assertNotRun(t, marker, p.dir)
				if !strings.Contains(r.stderr, tc.warned) {
					t.Errorf("no warning names %s:\n%s", tc.warned, r.stderr)
				}
			})
		})
	}
}
