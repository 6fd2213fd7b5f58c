package krun

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/imageuse"
	"github.com/devsandbox/devsandbox/isolator/krun/helper"
)

// fakeImages is an imageStore; the engine it embeds is nil, so any other call fails.
type fakeImages struct {
	engine
	imgs    []container.Image
	users   map[string]int
	removed []string
	// have: the IDs (hex, no "sha256:") of the images podman has beyond imgs.
	have map[string]bool
}

func (f *fakeImages) HasImage(id string) (bool, error) {
	for _, im := range f.imgs {
		if imageIDOf(im.ID) == id && !slices.Contains(f.removed, im.ID) {
			return true, nil
		}
	}
	return f.have[id], nil
}

func (f *fakeImages) DefaultImages() ([]container.Image, error) { return f.imgs, nil }
func (f *fakeImages) Users(id string) (int, error)              { return f.users[id], nil }
func (f *fakeImages) RemoveImage(id string) error {
	f.removed = append(f.removed, id)
	return nil
}

// prune removes the default images of other builds that no container uses and no run
// used within --days (none recorded: made before it); it keeps the current build's,
// krun.image's, the user's own, those in use, one a run used recently and one made
// recently; with dryRun it removes nothing.
func TestPruneImages(t *testing.T) {
	label := func(v string) map[string]string {
		return map[string]string{container.LabelImage: "default", container.LabelVersion: v}
	}
	now := time.Now()
	day := 24 * time.Hour
	old := now.Add(-40 * day)
	newStore := func() *fakeImages {
		return &fakeImages{imgs: []container.Image{
			{ID: "sha256:0123456789abcdef", Names: []string{"localhost/devsandbox/default:old1"}, Labels: label("old1"), Created: old},
			{ID: "sha256:1111111111111111", Names: []string{"localhost/devsandbox/default:old2"}, Labels: label("old2"), Created: old},
			{ID: "sha256:2222222222222222", Names: []string{"localhost/devsandbox/default:cur"}, Labels: label("cur"), Created: old},
			{ID: "sha256:3333333333333333", Names: []string{"localhost/me/tools:1"}, Labels: label("old1"), Created: old},
			{ID: "sha256:4444444444444444", Names: []string{"localhost/devsandbox/default:pinned"}, Labels: label("pinned"), Created: old},
			{ID: "sha256:5555555555555555", Names: []string{"localhost/devsandbox/default:used"}, Labels: label("used"), Created: old},
			{ID: "sha256:6666666666666666", Names: []string{"localhost/devsandbox/default:stale"}, Labels: label("stale"), Created: old},
			{ID: "sha256:7777777777777777", Names: []string{"localhost/devsandbox/default:new"}, Labels: label("new"), Created: now.Add(-3 * day)},
		}, users: map[string]int{"sha256:1111111111111111": 1}}
	}
	stateRoot := t.TempDir()
	for id, at := range map[string]time.Time{"5555555555555555": now.Add(-49 * time.Hour), "6666666666666666": now.Add(-31 * day)} {
		if err := imageuse.Record(stateRoot, imageuse.Podman, id, at); err != nil {
			t.Fatal(err)
		}
	}
	for _, dry := range []bool{true, false} {
		store := newStore()
		b := &Isolator{Settings: helper.Settings{Version: "cur", Image: "devsandbox/default:pinned", RuntimeDir: t.TempDir()}, host: fakeHost{t: t}, engineFn: func() (engine, error) { return store, nil }}
		got, err := b.PruneImages(context.Background(), stateRoot, 30*day, dry)
		verb := "removed"
		var removed []string
		if dry {
			verb = "would remove"
		} else {
			removed = []string{"sha256:0123456789abcdef", "sha256:6666666666666666"}
		}
		want := []string{
			verb + " image 0123456789ab (devsandbox/default:old1) in podman: the default image of devsandbox old1, this is cur, no use of it is recorded and it was made 40 days ago",
			"kept image 111111111111 (devsandbox/default:old2) in podman: the default image of devsandbox old2, this is cur, but 1 container(s) use it",
			"kept image 555555555555 (devsandbox/default:used) in podman: the default image of devsandbox used, this is cur, but a run used it 2 days ago",
			verb + " image 666666666666 (devsandbox/default:stale) in podman: the default image of devsandbox stale, this is cur, and no run used it for 31 days",
			"kept image 777777777777 (devsandbox/default:new) in podman: the default image of devsandbox new, this is cur, but it was made 3 days ago (no use of it is recorded yet)",
		}
		if err != nil || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(store.removed, removed) {
			t.Errorf("dry run %v: %q, %v, removed %q\nwant %q, removed %q", dry, got, err, store.removed, want, removed)
		}
	}
	if !imageuse.Last(stateRoot, imageuse.Podman, "6666666666666666").IsZero() {
		t.Error("the record of a removed image is left")
	}
}

// A dry prune with no podman service running starts none (fakeHost fails the test on
// StartService) and connects to nothing: it says in one line what it did not list and
// how to prune it, and it is not an error. Nothing is made in the runtime directory.
func TestPruneImagesDryRunStartsNothing(t *testing.T) {
	rt := t.TempDir()
	b := &Isolator{
		Settings: helper.Settings{Version: "cur", Runtime: "krun", RuntimeDir: rt},
		host:     fakeHost{t: t, down: true},
		engineFn: func() (engine, error) {
			t.Error("a dry run with no service connected to one")
			return nil, errors.New("no")
		},
	}
	got, err := b.PruneImages(context.Background(), t.TempDir(), 0, true)
	sock := b.socketName()
	want := []string{"not listed: the containers and default images in podman (the krun isolator's): podman's API service for krun is not running on " + sock +
		", and a dry run starts nothing; `devsandbox sandboxes prune` without --dry-run starts it and prunes them"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("PruneImages(dry run) = %q, %v; want %q, nil", got, err, want)
	}
	if entries, _ := os.ReadDir(rt); len(entries) > 0 {
		t.Errorf("the dry run made %v in the runtime directory", entries)
	}
}

// fakeRuns is a containerStore.
type fakeRuns struct {
	cs      []runContainer
	removed []string
}

func (f *fakeRuns) StoppedRuns() ([]runContainer, error) { return f.cs, nil }
func (f *fakeRuns) RemoveContainer(id string) error {
	f.removed = append(f.removed, id)
	return nil
}

// prune removes the containers killed runs left: exited, or created and never
// started, over leftoverAge ago; a younger one may be a live run's (between its exit
// and the run's removal, or its creation and start), and is left, as with dryRun.
func TestPruneContainers(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, dry := range []bool{true, false} {
		store := &fakeRuns{cs: []runContainer{
			{ID: "old-exit", Name: "devsandbox-a-1", Started: true, Created: now.Add(-10 * time.Minute), Exited: now.Add(-5 * time.Minute)},
			{ID: "new-exit", Name: "devsandbox-a-2", Started: true, Created: now.Add(-10 * time.Minute), Exited: now.Add(-time.Second)},
			{ID: "old-created", Name: "devsandbox-a-3", Created: now.Add(-2 * time.Minute)},
			{ID: "new-created", Name: "devsandbox-a-4", Created: now.Add(-time.Second)},
		}}
		got, err := pruneContainers(store, now, dry)
		verb, removed := "removed", []string{"old-exit", "old-created"}
		if dry {
			verb, removed = "would remove", nil
		}
		want := []string{
			verb + " container devsandbox-a-1 in podman: exited 5m0s ago, left by a krun run that was killed",
			verb + " container devsandbox-a-3 in podman: created 2m0s ago and never started, left by a krun run that was killed",
		}
		if err != nil || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(store.removed, removed) {
			t.Errorf("dry run %v: %q, %v, removed %q\nwant %q, removed %q", dry, got, err, store.removed, want, removed)
		}
	}
}

// A prune removes the ENV records of the images it removed and of those podman no
// longer has, after the images; a dry run with no service lists the records by their
// age alone and says which it did not check.
func TestPruneImagesRecords(t *testing.T) {
	now := time.Now()
	label := map[string]string{container.LabelImage: "default", container.LabelVersion: "old"}
	store := &fakeImages{imgs: []container.Image{{ID: "sha256:6666666666666666", Names: []string{"localhost/devsandbox/default:old"}, Labels: label, Created: now.Add(-40 * day)}},
		have: map[string]bool{"7777777777777777": true}}
	root := t.TempDir()
	stale := record(t, root, "devsandbox/default:old", "6666666666666666", now)
	missing := record(t, root, "me/gone", "5555555555555555", now)
	kept := record(t, root, "me/here", "7777777777777777", now)

	b := &Isolator{Settings: helper.Settings{Version: "cur", Runtime: "krun", RuntimeDir: t.TempDir()}, host: fakeHost{t: t, down: true}}
	got, err := b.PruneImages(context.Background(), root, 30*day, true)
	want := []string{"not listed: the containers and default images in podman (the krun isolator's): podman's API service for krun is not running on " + b.socketName() +
		", and a dry run starts nothing; `devsandbox sandboxes prune` without --dry-run starts it and prunes them",
		"not checked: whether podman still has the images of 3 image ENV record(s) of krun in " + filepath.Dir(stale) + ", kept for their recent use: podman's API service for krun is not running on " + b.socketName() + ", and a dry run starts nothing"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("dry run with no service = %q, %v\nwant %q", got, err, want)
	}

	b = &Isolator{Settings: helper.Settings{Version: "cur", RuntimeDir: t.TempDir()}, host: fakeHost{t: t}, engineFn: func() (engine, error) { return store, nil }}
	got, err = b.PruneImages(context.Background(), root, 30*day, false)
	want = []string{
		"removed image 666666666666 (devsandbox/default:old) in podman: the default image of devsandbox old, this is cur, no use of it is recorded and it was made 40 days ago",
		"removed " + missing + ": the ENV of image me/gone (555555555555), recorded for krun's launches, but podman no longer has that image",
		"removed " + stale + ": the ENV of image devsandbox/default:old (666666666666), recorded for krun's launches, whose image this prune removed",
	}
	slices.Sort(got[1:])
	slices.Sort(want[1:])
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("prune = %q, %v\nwant %q", got, err, want)
	}
	for p, there := range map[string]bool{stale: false, missing: false, kept: true} {
		if _, err := os.Lstat(p); (err == nil) != there {
			t.Errorf("%s there: %v, want %v", p, err == nil, there)
		}
	}
}
