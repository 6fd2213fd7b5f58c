package krun

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator/imageuse"
)

const day = 24 * time.Hour

// record writes the ENV record of ref naming image id, last written at, and returns
// its path.
func record(t *testing.T, root, ref, id string, at time.Time) string {
	t.Helper()
	if err := saveImageEnv(root, ref, id, []string{"A=1"}); err != nil {
		t.Fatal(err)
	}
	p := imageEnvPath(root, ref)
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
	return p
}

// prune removes the records of an image podman no longer has, of one this prune
// removed, of one no launch used within --days, unreadable ones and a killed
// launch's temporary file; it keeps the records launches used (by the image's
// recorded use or the record's own time), a fresh temporary file, and a link planted
// as a record, which it does not follow. A dry run removes nothing and says the same.
func TestPruneImageEnv(t *testing.T) {
	now := time.Now()
	root := t.TempDir()
	id := func(c string) string { return strings.Repeat(c, 64) }
	gone := record(t, root, "img/gone", id("a"), now)
	used := record(t, root, "img/used", id("b"), now.Add(-40*day))
	if err := imageuse.Record(root, imageuse.Podman, id("b"), now.Add(-2*day)); err != nil {
		t.Fatal(err)
	}
	unused := record(t, root, "img/unused", id("c"), now.Add(-40*day))
	if err := imageuse.Record(root, imageuse.Podman, id("c"), now.Add(-31*day)); err != nil {
		t.Fatal(err)
	}
	fresh := record(t, root, "img/fresh", id("d"), now.Add(-time.Hour))
	removed := record(t, root, "img/removed", id("e"), now)
	dir := filepath.Dir(gone)
	garbage := filepath.Join(dir, strings.Repeat("0", 32))
	oldTmp, newTmp := filepath.Join(dir, ".tmp-1"), filepath.Join(dir, ".tmp-2")
	for p, at := range map[string]time.Time{garbage: now, oldTmp: now.Add(-2 * time.Minute), newTmp: now} {
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	// A link planted as the record of img/link, to a stale record elsewhere.
	victim := record(t, t.TempDir(), "img/link", id("f"), now.Add(-100*day))
	link := imageEnvPath(root, "img/link")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	podmanHas := map[string]bool{id("b"): true, id("c"): true, id("d"): true, id("e"): true, id("f"): true}
	has := func(id string) (bool, error) { return podmanHas[id], nil }
	for _, dry := range []bool{true, false} {
		verb := "removed "
		if dry {
			verb = "would remove "
		}
		thisPrune := "this prune removed"
		if dry {
			thisPrune = "this prune would remove"
		}
		got, err := pruneImageEnv(root, map[string]bool{id("e"): true}, has, nil, now, 30*day, dry)
		want := map[string]string{
			gone:    verb + gone + ": the ENV of image img/gone (aaaaaaaaaaaa), recorded for krun's launches, but podman no longer has that image",
			unused:  verb + unused + ": the ENV of image img/unused (cccccccccccc), recorded for krun's launches, and no run used it for 31 days",
			removed: verb + removed + ": the ENV of image img/removed (eeeeeeeeeeee), recorded for krun's launches, whose image " + thisPrune,
			garbage: verb + garbage + ": not a record a launch can use (unreadable, or of another reference)",
			oldTmp:  verb + oldTmp + ": a record a killed launch left half-written",
		}
		if err != nil {
			t.Errorf("dry run %v: %v", dry, err)
		}
		gotSet := map[string]string{}
		for _, l := range got {
			f := strings.Fields(strings.TrimPrefix(l, verb))
			gotSet[strings.TrimSuffix(f[0], ":")] = l
		}
		if !reflect.DeepEqual(gotSet, want) || len(got) != len(want) {
			t.Errorf("dry run %v: lines\n%s\nwant\n%q", dry, strings.Join(got, "\n"), want)
		}
		for _, p := range []string{gone, used, unused, fresh, removed, garbage, oldTmp, newTmp, link, victim} {
			_, lerr := os.Lstat(p)
			if wantThere := dry || want[p] == ""; wantThere != (lerr == nil) {
				t.Errorf("dry run %v: %s there: %v, want %v", dry, p, lerr == nil, wantThere)
			}
		}
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the planted link was replaced or removed: %v, %v", fi, err)
	}
}

// Without podman's answer (a dry run with no service running), a record goes only
// by its age, and a line says which were not checked and why.
func TestPruneImageEnvUnasked(t *testing.T) {
	now := time.Now()
	root := t.TempDir()
	id := func(c string) string { return strings.Repeat(c, 64) }
	old := record(t, root, "img/old", id("a"), now.Add(-40*day))
	record(t, root, "img/new", id("b"), now)
	record(t, root, "img/new2", id("c"), now)
	notAsked := errNotRunning
	got, err := pruneImageEnv(root, nil, nil, notAsked, now, 30*day, true)
	want := []string{
		"would remove " + old + ": the ENV of image img/old (aaaaaaaaaaaa), recorded for krun's launches, and no run used it for 40 days",
		"not checked: whether podman still has the images of 2 image ENV record(s) of krun in " + filepath.Dir(old) + ", kept for their recent use: " + errNotRunning.Error(),
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("pruneImageEnv = %q, %v\nwant %q", got, err, want)
	}
	if _, err := os.Stat(old); err != nil {
		t.Errorf("a dry run removed %s: %v", old, err)
	}
}

// A link planted at the records' directory is not followed: prune fails naming it,
// and the records where it points stay.
func TestPruneImageEnvDirLink(t *testing.T) {
	now := time.Now()
	elsewhere := t.TempDir()
	stale := record(t, elsewhere, "img/old", strings.Repeat("a", 64), now.Add(-40*day))
	root := t.TempDir()
	if err := os.Symlink(filepath.Dir(stale), filepath.Join(root, imageEnvDir)); err != nil {
		t.Fatal(err)
	}
	has := func(string) (bool, error) { return false, nil }
	got, err := pruneImageEnv(root, nil, has, nil, now, 0, false)
	if err == nil || !strings.Contains(err.Error(), "is a link or not a directory") || len(got) > 0 {
		t.Errorf("pruneImageEnv through a link = %q, %v; want an error naming the link", got, err)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("the record behind the link went: %v", err)
	}
}
