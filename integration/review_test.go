//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Paths git on the host would trust, planted from inside: a commondir in a plain
// repository is quarantined (moved out of the sandbox's reach) with a warning; new
// agent settings are reported.
func TestTripwires(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		r := p.sandbox(iso, nil, `mkdir -p evil/hooks; echo ../evil > .git/commondir && echo planted; mkdir -p .claude && echo '{}' > .claude/settings.json; echo 'isolator = "bwrap"' > .devsandbox.toml`)
		if r.code != 0 || !strings.Contains(r.stdout, "planted") {
			t.Fatalf("setup inside the sandbox:\n%s", r)
		}
		if _, err := os.Stat(p.path("proj/.git/commondir")); !os.IsNotExist(err) {
			t.Fatalf("a planted commondir survived the run: %v\n%s", err, r)
		}
		quarantined := filepath.Join(it.home, ".local/state/devsandbox", p.name(), "quarantine")
		if !strings.Contains(r.stderr, "moved to "+quarantined) {
			t.Fatalf("the planted commondir was not quarantined (into %s):\n%s", quarantined, r.stderr)
		}
		for _, want := range []string{".git/commondir", "moved to", ".claude/settings.json", ".devsandbox.toml: devsandbox reads it"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("no warning naming %q:\n%s", want, r.stderr)
			}
		}
		// A later run refuses a commondir in a plain repository.
		if err := os.WriteFile(p.path("proj/.git/commondir"), []byte("../evil\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := p.sandbox(iso, nil, "true"); r.code != 125 || !strings.Contains(r.stderr, "commondir") {
			t.Fatalf("a run with a commondir present:\n%s", r)
		}
	})
}

// Masked files stay masked across sessions even when a session moves their directory
// into one the scan skips, and an unreadable directory of the user's fails closed.
func TestMasksAcrossSessions(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("proj/sub/.env", "SUBSECRET=1\n")
		if refusesAnchors(iso) {
			wantAnchorsRefused(t, p.sandbox(iso, nil, `cat sub/.env`))
			return
		}
		if r := p.sandbox(iso, nil, `mkdir -p node_modules && mv sub node_modules/sub 2>/dev/null && echo MOVED; true`); r.stdout != "" {
			t.Fatalf("the directory holding a masked file was moved:\n%s", r)
		}
		if out := p.mustSandbox(iso, nil, `cat sub/.env`); out != "" {
			t.Fatalf("masked file readable: %q", out)
		}
		if r := p.sandbox(iso, nil, `chmod 000 sub`); r.code != 0 {
			t.Fatalf("chmod inside:\n%s", r)
		}
		r := p.sandbox(iso, nil, `chmod 755 sub; cat sub/.env`)
		if r.code != 125 || strings.Contains(r.stdout, "SUBSECRET") || !strings.Contains(r.stderr, "chmod u+rx") {
			t.Fatalf("an unreadable directory of the user's did not fail closed:\n%s", r)
		}
		_ = os.Chmod(p.path("proj/sub"), 0o755)
	})
}

// A symlink planted in the persistent sandbox home cannot redirect a later session's
// mounts.
func TestPlantedSymlinkInSandboxHome(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		writeHome(t, ".config/git/config", "[user]\n\tname = t\n") // the git tool binds it below ~/.config
		t.Cleanup(func() { os.RemoveAll(it.home + "/.config/git") })
		p.mustSandbox(iso, nil, `mv ~/.config ~/.config.old && ln -s /tmp/elsewhere ~/.config`)
		r := p.sandbox(iso, nil, "true")
		if r.code != 125 || !strings.Contains(r.stderr, "is a symlink") {
			t.Fatalf("a planted symlink in the sandbox home did not stop the run:\n%s", r)
		}
	})
}

// A symlinked .git/hooks cannot be protected and is refused.
func TestSymlinkedHooksRefused(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	if err := os.RemoveAll(p.path("proj/.git/hooks")); err != nil {
		t.Fatal(err)
	}
	p.mkdir("proj/.githooks")
	if err := os.Symlink("../.githooks", p.path("proj/.git/hooks")); err != nil {
		t.Fatal(err)
	}
	_ = os.Lchown(p.path("proj/.git/hooks"), it.uid, it.gid)
	if r := p.sandbox("bwrap", nil, "true"); r.code != 125 || !strings.Contains(r.stderr, "core.hooksPath") {
		t.Fatalf("symlinked hooks:\n%s", r)
	}
}
