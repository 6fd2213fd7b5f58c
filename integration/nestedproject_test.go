//go:build integration

package integration

import (
	"os"
	"strings"
	"testing"
)

// TestPlantedGitDropsEnclosingProjectFile: the project is the nearest directory
// holding a .git, and a sandbox can make one anywhere in the project (`git init sub`
// passes the watch: a clean new repository). The user's next run from that
// subdirectory was then a project of its own, and the enclosing project's trusted
// .devsandbox.toml was silently not applied: here its mask_files, so the run read
// the secret the project file masks. A run from inside a repository nested in a
// project whose file you trusted now stops (125), naming both, until the nested
// directory has a trusted project file of its own; run from the enclosing project
// it applies as before.
func TestPlantedGitDropsEnclosingProjectFile(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	t.Cleanup(func() { os.Remove(it.home + "/.config/devsandbox/trusted.toml") })
	p.write("proj/.devsandbox.toml", "[sandbox]\nmask_files = [\"*.secret\"]\n")
	if r := run(t, p.dir, nil, "", "config", "trust"); r.code != 0 {
		t.Fatalf("config trust:\n%s", r)
	}
	p.write("proj/sub/key.secret", "PROJECTSECRET\n")
	if out := p.mustSandbox("bwrap", nil, "cat sub/key.secret; echo end"); out != "end\n" {
		t.Fatalf("the trusted project file's mask not applied: %q", out)
	}
	sub := p.path("proj/sub")
	t.Cleanup(func() { p.forget(sub) })
	for _, plant := range []struct{ name, script string }{
		{"an empty directory", "mkdir sub/.git"},
		{"a new repository", "git init -q sub"},
	} {
		t.Run(plant.name, func(t *testing.T) {
			os.RemoveAll(p.path("proj/sub/.git"))
			p.mustSandbox("bwrap", nil, plant.script)
			if _, err := os.Lstat(p.path("proj/sub/.git")); err != nil {
				t.Fatalf("the plant is gone after the run: %v", err)
			}
			r := run(t, sub, nil, "", "--isolator=bwrap", "--", "/bin/sh", "-c", "cat key.secret; echo end")
			want := sub + " holds a .git, so it is a project of its own, inside the project " + p.dir + " whose trusted " + p.dir + "/.devsandbox.toml would not apply here"
			if strings.Contains(r.stdout, "PROJECTSECRET") || r.code != 125 || !strings.Contains(r.stderr, want) {
				t.Errorf("a run from a directory where the sandbox planted a .git (%s) dropped the enclosing project's trusted file; want 125 saying %q:\n%s", plant.name, want, r)
			}
		})
	}
	// The enclosing project's own runs are unchanged.
	if out := p.mustSandbox("bwrap", nil, "cat sub/key.secret; echo end"); out != "end\n" {
		t.Errorf("from the enclosing project: %q", out)
	}
	// A nested project with a trusted file of its own is the user's choice: it runs.
	p.write("proj/sub/.devsandbox.toml", "[sandbox]\nmask_files = [\"*.secret\"]\n")
	if r := run(t, sub, nil, "", "config", "trust"); r.code != 0 {
		t.Fatalf("config trust in the nested project:\n%s", r)
	}
	if r := run(t, sub, nil, "", "--isolator=bwrap", "--", "/bin/sh", "-c", "cat key.secret; echo end"); r.code != 0 || r.stdout != "end\n" {
		t.Errorf("the nested project with its own trusted file:\n%s", r)
	}
}

// TestRemovedTrustedProjectFile: only the project's own .devsandbox.toml is read-only
// in its sandbox; a nested repository's (a submodule, a vendored repository you also
// run devsandbox in) is an ordinary file there. A run of the enclosing project removed
// it, and the nested project's next run went ahead without the file you trusted: here
// its mask_files, so it read the secret the file masks. A trusted file that is gone now
// stops the run (125) as a changed one does; `devsandbox config trust` in the project
// forgets it when you removed it yourself.
func TestRemovedTrustedProjectFile(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	t.Cleanup(func() { os.Remove(it.home + "/.config/devsandbox/trusted.toml") })
	sub := p.newRepo("proj/sub")
	t.Cleanup(func() { p.forget(sub) })
	p.write("proj/sub/.devsandbox.toml", "[sandbox]\nmask_files = [\"*.secret\"]\n")
	p.write("proj/sub/key.secret", "PROJECTSECRET\n")
	if r := run(t, sub, nil, "", "config", "trust"); r.code != 0 {
		t.Fatalf("config trust in the nested project:\n%s", r)
	}
	read := []string{"--isolator=bwrap", "--", "/bin/sh", "-c", "cat key.secret; echo end"}
	if r := run(t, sub, nil, "", read...); r.code != 0 || r.stdout != "end\n" {
		t.Fatalf("the trusted file's mask not applied:\n%s", r)
	}
	p.mustSandbox("bwrap", nil, "rm sub/.devsandbox.toml")
	file := sub + "/.devsandbox.toml"
	if _, err := os.Lstat(file); err == nil {
		t.Fatalf("the enclosing project's sandbox could not remove %s: nothing to test", file)
	}
	r := run(t, sub, nil, "", read...)
	want := file + ": trusted (trusted "
	if strings.Contains(r.stdout, "PROJECTSECRET") || r.code != 125 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "is gone") {
		t.Errorf("a run after the sandbox removed the trusted project file; want 125 saying %q … is gone:\n%s", want, r)
	}
	// Removed on purpose: config trust forgets it, and the run goes ahead without it.
	if r := run(t, sub, nil, "", "config", "trust"); r.code != 0 || !strings.Contains(r.stdout, "forgot") {
		t.Fatalf("config trust with the project file gone:\n%s", r)
	}
	if r := run(t, sub, nil, "", read...); r.code != 0 || r.stdout != "PROJECTSECRET\nend\n" {
		t.Errorf("after config trust forgot the file:\n%s", r)
	}
}
