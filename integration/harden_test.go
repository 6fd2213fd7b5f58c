//go:build integration

package integration

import (
	"os"
	"strings"
	"testing"
)

// TestLefthookRemotesInSubmodules: lefthook run inside a submodule keeps its remotes'
// clones in the submodule's git dir (.git/modules/<sub>/info/lefthook-remotes), and a
// nested submodule's in .git/modules/<sub>/modules/<nested>/info/...: the host's next
// commit in that submodule runs what they hold. On s28 only the project's own git dirs
// were protected: the sandbox rewrote a submodule's cached config and the clone's git
// config, moved the submodules' git dirs away (their read-only hooks with them), and a
// cache it created there went unreported. Now they are protected as the project's own
// are, and every submodule git dir (and modules/ down to it) is a mount point.
func TestLefthookRemotesInSubmodules(t *testing.T) {
	requireGit(t)
	mods := []string{".git/modules/sub", ".git/modules/sub/modules/nested"}
	// A submodule holding a nested one, as git submodule update --init --recursive makes.
	setup := func(t *testing.T) *project {
		p := newProject(t)
		nested := p.newRepo("nestsrc")
		src := p.newRepo("subsrc")
		mustHostGit(t, src, "-c", "protocol.file.allow=always", "submodule", "add", "-q", nested, "nested")
		mustHostGit(t, src, "commit", "-qm", "nested")
		p.newRepo("proj")
		mustHostGit(t, p.dir, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "sub")
		mustHostGit(t, p.dir, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init", "--recursive")
		for _, m := range mods {
			if _, err := os.Stat(p.path("proj/" + m + "/HEAD")); err != nil {
				t.Fatalf("the submodule's git dir: %v", err)
			}
		}
		return p
	}
	forEachIsolator(t, func(t *testing.T, iso string) {
		t.Run("present", func(t *testing.T) {
			p := setup(t)
			script := ""
			for _, m := range mods {
				plantLefthookRemote(p, m)
				script += lefthookRemoteAttack(m)
			}
			// Renamed away, a git dir would take its read-only parts along and could be
			// replaced by a writable copy.
			r := p.sandbox(iso, nil, script+`mv .git/modules/sub/modules/nested .git/modules/sub/modules/n2 2>/dev/null && echo MOVED nested git dir
mv .git/modules/sub/modules .git/modules/sub/m2 2>/dev/null && echo MOVED nested modules
mv .git/modules/sub .git/modules/sub2 2>/dev/null && echo MOVED sub git dir
mv .git/modules .git/modules2 2>/dev/null && echo MOVED modules
true`)
			if r.code != 0 || strings.Contains(r.stdout, "WROTE") || strings.Contains(r.stdout, "MOVED") || strings.Count(r.stdout, "exclude writable") != len(mods) {
				t.Errorf("lefthook's remote configs in submodules, which the host's next commit there runs: want them read-only, not movable (nor the git dirs holding them), and info/exclude writable, got:\n%s", r)
			}
			for _, m := range mods {
				lefthookRemoteKept(t, p, m)
			}
		})
		t.Run("created", func(t *testing.T) {
			p := setup(t)
			script := ""
			for _, m := range mods {
				// The watch may move the directory before the file is written in it.
				script += `mkdir -p ` + m + `/info/lefthook-remotes/shared && printf 'pre-commit:\n  commands:\n    evil:\n      run: echo HOOK-RAN-ON-HOST\n' > ` + m + `/info/lefthook-remotes/shared/lefthook.yml
`
			}
			r := p.sandbox(iso, nil, script+"echo done")
			if r.code != 0 || !strings.Contains(r.stdout, "done") {
				t.Fatalf("planting lefthook remote caches in submodules: %s", r)
			}
			for _, m := range mods {
				if _, err := os.Lstat(p.path("proj/" + m + "/info/lefthook-remotes")); err == nil {
					t.Errorf("a lefthook remote cache the sandbox created in %s is still there after the run, unquarantined:\n%s", m, r)
				}
				if !strings.Contains(r.stderr, m+"/info/lefthook-remotes") {
					t.Errorf("the run did not report the lefthook remote cache the sandbox created in %s:\n%s", m, r)
				}
			}
		})
	})
}
