//go:build integration

package integration

import (
	"os"
	"strings"
	"testing"
)

// TestLefthookRemotesReadOnly: lefthook clones the repositories a config's `remotes:`
// name into <git dir>/info/lefthook-remotes/<repo>, merges the configs there into the
// hooks the host's next commit runs (without fetching again unless the remote asks
// for a refetch), and on a refetch runs git in each clone, which obeys that clone's
// own .git/config (a core.fsmonitor). All of it lies inside .git: no diff shows a
// change. On s28 the sandbox rewrote the cached config and the clone's git config, and
// a cache it created where none was went unreported. Now the cache is read-only,
// .git/info cannot be renamed away with it, and one the sandbox creates is
// quarantined; the rest of .git/info stays writable.
func TestLefthookRemotesReadOnly(t *testing.T) {
	requireGit(t)
	const cfg = "pre-commit:\n  commands:\n    lint:\n      run: make lint\n"
	const gitcfg = "[core]\n\trepositoryformatversion = 0\n"
	forEachIsolator(t, func(t *testing.T, iso string) {
		t.Run("present", func(t *testing.T) {
			p := newProject(t)
			p.newRepo("proj")
			p.write("proj/.git/info/exclude", "")
			p.write("proj/.git/info/lefthook-remotes/shared/lefthook.yml", cfg)
			p.write("proj/.git/info/lefthook-remotes/shared/.git/config", gitcfg)
			r := p.sandbox(iso, nil, `cd .git/info
echo '    evil: {run: echo HOOK-RAN-ON-HOST}' >> lefthook-remotes/shared/lefthook.yml 2>/dev/null && echo WROTE config
printf '[core]\n\tfsmonitor = "echo HOOK-RAN-ON-HOST"\n' >> lefthook-remotes/shared/.git/config 2>/dev/null && echo WROTE clone config
mv lefthook-remotes/shared lefthook-remotes/old 2>/dev/null && echo MOVED clone
mv lefthook-remotes lefthook-remotes.old 2>/dev/null && echo MOVED remotes
cd .. && mv info info.old 2>/dev/null && echo MOVED info
echo '*.log' >> info/exclude && echo exclude writable`)
			if r.code != 0 || strings.Contains(r.stdout, "WROTE") || strings.Contains(r.stdout, "MOVED") || !strings.Contains(r.stdout, "exclude writable") {
				t.Errorf("lefthook's remote configs, which the host's next commit runs: want them read-only, not movable, and .git/info/exclude writable, got:\n%s", r)
			}
			if b, err := os.ReadFile(p.path("proj/.git/info/lefthook-remotes/shared/lefthook.yml")); err != nil || string(b) != cfg {
				t.Errorf("the cached remote config on the host: %q, %v", b, err)
			}
			if b, err := os.ReadFile(p.path("proj/.git/info/lefthook-remotes/shared/.git/config")); err != nil || string(b) != gitcfg {
				t.Errorf("the remote clone's git config on the host: %q, %v", b, err)
			}
		})
		t.Run("created", func(t *testing.T) {
			p := newProject(t)
			p.newRepo("proj")
			// The watch may move the directory before the file is written in it.
			r := p.sandbox(iso, nil, `mkdir -p .git/info/lefthook-remotes/shared && printf 'pre-commit:\n  commands:\n    evil:\n      run: echo HOOK-RAN-ON-HOST\n' > .git/info/lefthook-remotes/shared/lefthook.yml; echo done`)
			if r.code != 0 || !strings.Contains(r.stdout, "done") {
				t.Fatalf("planting a lefthook remote cache: %s", r)
			}
			if _, err := os.Lstat(p.path("proj/.git/info/lefthook-remotes")); err == nil {
				t.Errorf("a lefthook remote cache the sandbox created is still in .git/info after the run, unquarantined:\n%s", r)
			}
			if !strings.Contains(r.stderr, "lefthook-remotes") {
				t.Errorf("the run did not report the lefthook remote cache the sandbox created:\n%s", r)
			}
		})
	})
}
