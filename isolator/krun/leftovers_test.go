package krun

import (
	"errors"
	"slices"
	"testing"
)

// fakeMarked is a markedStore: the containers by id with their mark.
type fakeMarked struct {
	runs    map[string]markedRun
	failing string // RemoveContainer fails for this id
	removed []string
}

func (f *fakeMarked) MarkedRuns() (map[string]markedRun, error) { return f.runs, nil }

func (f *fakeMarked) RemoveContainer(id string) error {
	if id == f.failing {
		return errors.New("container is being removed")
	}
	f.removed = append(f.removed, id)
	return nil
}

// Only the containers whose mark is dead go; one that fails to go is reported, the
// others still go. A mark's path is asked only where it was made: a container of
// another machine or mount namespace sharing the podman service (another container of
// the user's with its own devsandbox, a remote service) names a path that this one
// may lack, which would make the other's live run look dead.
func TestRemoveDeadRuns(t *testing.T) {
	here := "boot-1/mnt:4026531841"
	store := &fakeMarked{
		runs: map[string]markedRun{
			"live": {"/s/runs/run-1", here}, "dead": {"/s/runs/run-2", here}, "dead2": {"/t/runs/run-3", here},
			"stuck": {"/t/runs/run-4", here}, "empty": {"", here},
			"elsewhere": {"/s/runs/run-5", "boot-1/mnt:4026532000"}, "older": {"/s/runs/run-6", ""},
		},
		failing: "stuck",
	}
	dead := map[string]bool{"/s/runs/run-2": true, "/t/runs/run-3": true, "/t/runs/run-4": true, "/s/runs/run-5": true, "/s/runs/run-6": true}
	var asked []string
	removed, err := removeDeadRuns(store, here, func(m string) bool { asked = append(asked, m); return dead[m] })
	slices.Sort(removed)
	slices.Sort(store.removed)
	if !slices.Equal(removed, []string{"dead", "dead2"}) || !slices.Equal(store.removed, removed) {
		t.Errorf("removed %v (store: %v), want [dead dead2]", removed, store.removed)
	}
	if err == nil {
		t.Error("the container that could not be removed is not reported")
	}
	for _, m := range []string{"", "/s/runs/run-5", "/s/runs/run-6"} {
		if slices.Contains(asked, m) {
			t.Errorf("the mark %q was asked about: it has none, or it is another namespace's", m)
		}
	}
	// Where cannot be told: nothing is removed.
	store.removed = nil
	if removed, _ := removeDeadRuns(store, "", func(string) bool { return true }); len(removed) > 0 {
		t.Errorf("removed %v without knowing where this run is", removed)
	}
}
