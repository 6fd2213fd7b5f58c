//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
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

// A dry run changes nothing on the host: `devsandbox --dry-run` on every isolator and
// `sandboxes prune --dry-run` leave the throwaway home (state, sandbox home, config,
// cache, the podman storage configured there), a runtime directory and a temporary
// directory of their own, the project, and the engines' containers and volumes of the
// project as they found them: no service started (podman's for krun, whose socket,
// log and locks would appear in the runtime directory), no lock, snapshot, session
// /tmp, mask cache or proxy CA made. Reading is allowed (a ping, a list, an inspect).
func TestDryRunsChangeNothing(t *testing.T) {
	p := newProject(t)
	p.write("proj/.env", "SECRET=1\n") // a mask to find: the scan's cache is a file a run writes
	rt, tmp := ownedTempDir(t, "dsb-dry-rt-"), ownedTempDir(t, "dsb-dry-tmp-")
	env := []string{"XDG_RUNTIME_DIR=" + rt, "TMPDIR=" + tmp, "API_TOKEN=dry-run-secret-31"}
	check := func(t *testing.T, args ...string) result {
		t.Helper()
		before := dryRunView(t, p, rt, tmp)
		r := run(t, p.dir, env, "", args...)
		if r.code != 0 {
			t.Errorf("devsandbox %s: want exit 0:\n%s", strings.Join(args, " "), r)
		}
		if changed := diffViews(before, dryRunView(t, p, rt, tmp)); len(changed) > 0 {
			t.Errorf("devsandbox %s changed the host:\n  %s\n%s", strings.Join(args, " "), strings.Join(changed, "\n  "), r)
		}
		return r
	}
	forEachIsolator(t, func(t *testing.T, iso string) {
		check(t, "--isolator="+iso, "--dry-run", "-e", "API_TOKEN", "--", "true")
	})
	t.Run("prune", func(t *testing.T) {
		// A real run first, so that prune has the project's state, sandbox home,
		// /etc snapshot and socket directories to consider (--days 0: all of them).
		if isolatorReady("bwrap") {
			if r := run(t, p.dir, env, "", "--isolator=bwrap", "--", "true"); r.code != 0 {
				t.Fatalf("the run before the dry prune:\n%s", r)
			}
		}
		r := check(t, "sandboxes", "prune", "--days", "0", "--dry-run")
		// No podman service listens in this runtime directory: what it would have
		// listed is said to be left out, not started for.
		if podmanReady == "" {
			sock := filepath.Join(rt, "podman")
			if !strings.Contains(r.stdout, "not listed: the containers and default images in podman (the krun isolator's): podman's API service for krun is not running on "+sock+"/") {
				t.Errorf("prune --dry-run does not say that podman's service in %s was not started:\n%s", sock, r)
			}
		}
	})
}

// ownedTempDir is a fresh directory of the test user's, mode 0700, removed at the
// test's end.
func ownedTempDir(t *testing.T, prefix string) string {
	t.Helper()
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chown(d, it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	return d
}

// dryRunView is what a dry run must leave as it is: the trees of the throwaway home
// (the project is in it), rt and tmp, and the containers and volumes of p each ready
// engine holds (docker's, podman's).
func dryRunView(t *testing.T, p *project, rt, tmp string) map[string]string {
	t.Helper()
	view := map[string]string{}
	for name, dir := range map[string]string{"home": it.home, "runtime": rt, "tmp": tmp} {
		for rel, v := range treeOf(t, dir) {
			view[name+"/"+rel] = v
		}
	}
	for _, iso := range []string{localDocker, remoteDocker, rootlessDocker} {
		if engineReady[iso] != "" {
			continue
		}
		held, err := engineHolds(t, iso, p.name())
		if err != nil {
			t.Fatal(err)
		}
		view["engine "+iso] = fmt.Sprint(held)
	}
	if podmanReady == "" {
		for _, what := range [][]string{{"ps", "-a"}, {"volume", "ls"}} {
			out, err := podmanAs(append(what, "-q", "--filter", "label=dev.devsandbox.name="+p.name())...)
			if err != nil {
				t.Fatalf("podman %s: %v: %s", strings.Join(what, " "), err, out)
			}
			view["podman "+what[0]] = out
		}
	}
	return view
}

// diffViews names what differs between two dryRunViews.
func diffViews(before, after map[string]string) []string {
	var out []string
	for k, v := range after {
		if w, ok := before[k]; !ok {
			out = append(out, "made "+k+" ("+v+")")
		} else if w != v {
			out = append(out, "changed "+k+" ("+w+" -> "+v+")")
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, "removed "+k)
		}
	}
	sort.Strings(out)
	return out
}
