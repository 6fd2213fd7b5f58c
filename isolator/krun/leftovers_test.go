package krun

import (
	"errors"
	"slices"
	"testing"
)

// fakeMarked is a markedStore: the containers by id with their mark.
type fakeMarked struct {
	runs    map[string]string
	failing string // RemoveContainer fails for this id
	removed []string
}

func (f *fakeMarked) MarkedRuns() (map[string]string, error) { return f.runs, nil }

func (f *fakeMarked) RemoveContainer(id string) error {
	if id == f.failing {
		return errors.New("container is being removed")
	}
	f.removed = append(f.removed, id)
	return nil
}

// Only the containers whose mark is dead go; one that fails to go is reported, the
// others still go.
func TestRemoveDeadRuns(t *testing.T) {
	store := &fakeMarked{
		runs:    map[string]string{"live": "/s/runs/run-1", "dead": "/s/runs/run-2", "dead2": "/t/runs/run-3", "stuck": "/t/runs/run-4", "empty": ""},
		failing: "stuck",
	}
	dead := map[string]bool{"/s/runs/run-2": true, "/t/runs/run-3": true, "/t/runs/run-4": true}
	var asked []string
	removed, err := removeDeadRuns(store, func(m string) bool { asked = append(asked, m); return dead[m] })
	slices.Sort(removed)
	slices.Sort(store.removed)
	if !slices.Equal(removed, []string{"dead", "dead2"}) || !slices.Equal(store.removed, removed) {
		t.Errorf("removed %v (store: %v), want [dead dead2]", removed, store.removed)
	}
	if err == nil {
		t.Error("the container that could not be removed is not reported")
	}
	if slices.Contains(asked, "") {
		t.Error("a container without a mark was asked about")
	}
}
