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
	forEachIsolator(t, func(t *testing.T, iso string) {
		t.Run("present", func(t *testing.T) {
			p := newProject(t)
			p.newRepo("proj")
			p.write("proj/.git/info/exclude", "")
			plantLefthookRemote(p, ".git")
			r := p.sandbox(iso, nil, lefthookRemoteAttack(".git"))
			if r.code != 0 || strings.Contains(r.stdout, "WROTE") || strings.Contains(r.stdout, "MOVED") || !strings.Contains(r.stdout, "exclude writable") {
				t.Errorf("lefthook's remote configs, which the host's next commit runs: want them read-only, not movable, and .git/info/exclude writable, got:\n%s", r)
			}
			lefthookRemoteKept(t, p, ".git")
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

// The cached config and clone config TestLefthookRemotesReadOnly and
// TestLefthookRemotesInSubmodules plant in a git dir's lefthook remote cache.
const (
	lefthookRemoteConfig = "pre-commit:\n  commands:\n    lint:\n      run: make lint\n"
	lefthookCloneConfig  = "[core]\n\trepositoryformatversion = 0\n"
)

// plantLefthookRemote makes a lefthook remote cache (a remote "shared") in the
// project's git dir gitDir (relative to the project: .git, .git/modules/sub).
func plantLefthookRemote(p *project, gitDir string) {
	p.write("proj/"+gitDir+"/info/lefthook-remotes/shared/lefthook.yml", lefthookRemoteConfig)
	p.write("proj/"+gitDir+"/info/lefthook-remotes/shared/.git/config", lefthookCloneConfig)
}

// lefthookRemoteAttack is a sandbox script that tries to change the cache in gitDir
// (printing WROTE or MOVED, with gitDir, for each attempt that worked), then writes
// info/exclude beside it (printing "exclude writable GITDIR").
func lefthookRemoteAttack(gitDir string) string {
	return `(cd ` + gitDir + `/info
echo '    evil: {run: echo HOOK-RAN-ON-HOST}' >> lefthook-remotes/shared/lefthook.yml 2>/dev/null && echo WROTE config ` + gitDir + `
printf '[core]\n\tfsmonitor = "echo HOOK-RAN-ON-HOST"\n' >> lefthook-remotes/shared/.git/config 2>/dev/null && echo WROTE clone config ` + gitDir + `
mv lefthook-remotes/shared lefthook-remotes/old 2>/dev/null && echo MOVED clone ` + gitDir + `
mv lefthook-remotes lefthook-remotes.old 2>/dev/null && echo MOVED remotes ` + gitDir + `
cd .. && mv info info.old 2>/dev/null && echo MOVED info ` + gitDir + `
echo '*.log' >> info/exclude && echo exclude writable ` + gitDir + `)
`
}

// lefthookRemoteKept fails t unless the cache plantLefthookRemote made in gitDir is
// on the host as it was planted.
func lefthookRemoteKept(t *testing.T, p *project, gitDir string) {
	t.Helper()
	if b, err := os.ReadFile(p.path("proj/" + gitDir + "/info/lefthook-remotes/shared/lefthook.yml")); err != nil || string(b) != lefthookRemoteConfig {
		t.Errorf("%s: the cached remote config on the host: %q, %v", gitDir, b, err)
	}
	if b, err := os.ReadFile(p.path("proj/" + gitDir + "/info/lefthook-remotes/shared/.git/config")); err != nil || string(b) != lefthookCloneConfig {
		t.Errorf("%s: the remote clone's git config on the host: %q, %v", gitDir, b, err)
	}
}
