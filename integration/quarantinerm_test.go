//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuarantineRemovalFollowsNoLink: what the watch quarantines is the sandbox's
// own tree, moved into devsandbox's state as it was, links and unreadable
// directories included; `sandboxes rm` removes it without following a link out
// of it. (A confirmation: the removal is the sandbox home's, tested there, but
// the quarantine had no attack test of its own.)
func TestQuarantineRemovalFollowsNoLink(t *testing.T) {
	requireGit(t)
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.newRepo("proj")
		victim := p.path("victim")
		p.write("victim/keep.txt", "host\n")
		p.write("victim/sub/keep.txt", "host\n")
		g := "vendor/x/.git"
		// The repository is made under another name and renamed into place whole:
		// the watch may quarantine a .git the moment it is hostile, so one planted
		// step by step could move before the script's last step (its chmod failed so).
		s := "vendor/stage/git"
		r := run(t, p.dir, gitEnv, "", "--isolator="+iso, "--", "/bin/sh", "-c", `set -e
			mkdir -p vendor/x vendor/stage && git init -q --bare `+s+` && git --git-dir=`+s+` config core.bare false
			git --git-dir=`+s+` config core.fsmonitor 'true'
			mkdir -p `+s+`/locked && ln -s `+victim+` `+s+`/abs && ln -s `+victim+`/sub `+s+`/locked/in
			ln -s ../../../../../../../../..`+victim+` `+s+`/rel && chmod 000 `+s+`/locked
			mv `+s+` `+g+` && echo planted`)
		if !strings.Contains(r.stdout, "planted") || !strings.Contains(r.stderr, "It was moved to") {
			t.Fatalf("the nested repository was not quarantined:\n%s", r)
		}
		quarantine := filepath.Join(it.home, ".local/state/devsandbox", p.name(), "quarantine")
		if _, err := os.Lstat(quarantine); err != nil {
			t.Fatalf("no quarantine: %v", err)
		}
		if r := run(t, p.dir, nil, "", "sandboxes", "rm", p.name()); r.code != 0 {
			t.Fatalf("sandboxes rm:\n%s", r)
		}
		if _, err := os.Lstat(quarantine); !os.IsNotExist(err) {
			t.Fatalf("sandboxes rm left the quarantine: %v", err)
		}
		for _, f := range []string{"victim/keep.txt", "victim/sub/keep.txt"} {
			if b, err := os.ReadFile(p.path(f)); err != nil || string(b) != "host\n" {
				t.Fatalf("after sandboxes rm: %s is %q (%v)", p.path(f), b, err)
			}
		}
	})
}
