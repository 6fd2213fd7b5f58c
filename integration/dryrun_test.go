//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --dry-run stops where a run stops: a symlink planted in the sandbox home on the way
// to the project's mount point (a previous session could have made it) makes the run
// refuse to launch (125), and --dry-run refuses with the same message, on every
// isolator, instead of printing a script that would not run. Nothing is created where
// the link leads.
func TestDryRunRefusesAPlantedLink(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.mkdir("victim")
		// The sandbox home's directory holding the project's mount point (the
		// project lies under the home), replaced by a link out.
		home := filepath.Join(it.home, ".local/share/devsandbox", p.name(), "home")
		rel, err := filepath.Rel(it.home, p.root)
		if err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(home, rel)
		if err := os.MkdirAll(home, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p.path("victim"), link); err != nil {
			t.Fatal(err)
		}
		for d := link; d != it.home; d = filepath.Dir(d) {
			if err := os.Lchown(d, it.uid, it.gid); err != nil {
				t.Fatal(err)
			}
		}
		want := "devsandbox: protection could not be applied: " + link + " is a symlink, and the sandbox mounts " + p.dir +
			" (project) through it, inside sandbox home (" + home + "); bubblewrap before 0.12 would create the mount point where the link leads (CVE-2026-87766); remove the link (a sandboxed program may have planted it)\n"
		for _, args := range [][]string{{"--", "/bin/true"}, {"--dry-run", "--", "/bin/true"}} {
			r := run(t, p.dir, nil, "", append([]string{"--isolator=" + iso}, args...)...)
			if r.code != 125 || r.stdout != "" || r.stderr != want {
				t.Errorf("devsandbox %s: want exit 125, no output and\n%s%s", strings.Join(args, " "), want, r)
			}
		}
		if tree := treeOf(t, p.path("victim")); len(tree) != 1 {
			t.Errorf("files were created where the link leads: %v", tree)
		}
	})
}
