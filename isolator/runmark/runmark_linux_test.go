package runmark

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator/projlock"
)

// A mark counts while its run holds it, for everyone but that run; once released,
// or left by a run that died (its lock gone), it does not, and the next Hold removes
// a dead run's. A pending mark (still under its dot-name) counts for a minute.
func TestHeld(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	now := time.Now()
	if Held(state, "", now) {
		t.Error("a state directory without marks is held")
	}
	if _, err := Hold(""); err == nil {
		t.Error("a mark in the working directory (no state directory)")
	}
	a, err := Hold(state)
	if err != nil {
		t.Fatal(err)
	}
	if !Held(state, "", now) || Held(state, a.Name, now) {
		t.Errorf("held by a live run: %v for others, %v for itself; want true, false", Held(state, "", now), Held(state, a.Name, now))
	}
	b, err := Hold(state)
	if err != nil {
		t.Fatal(err)
	}
	if !Held(state, a.Name, now) || !Held(state, b.Name, now) {
		t.Error("two runs: one does not see the other's mark")
	}
	b.Release()
	if Held(state, a.Name, now) {
		t.Error("a released mark counts")
	}
	// A run that died: its mark stays, unlocked.
	a.f.Close()
	if Held(state, "", now) {
		t.Error("a dead run's mark counts")
	}
	c, err := Hold(state)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	names := entries(t, state)
	if !slices.Equal(names, []string{c.Name}) {
		t.Errorf("marks after a new run: %v; want only its own %s (the dead run's removed)", names, c.Name)
	}
	pending := filepath.Join(state, Dir, ".run-x")
	if err := os.WriteFile(pending, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if !Held(state, c.Name, now) || Held(state, c.Name, now.Add(2*pendingAge)) {
		t.Error("a pending mark counts other than for a minute")
	}
}

// Dead is true only for a mark whose run is provably gone: released, or left unlocked.
func TestDead(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	a, err := Hold(state)
	if err != nil {
		t.Fatal(err)
	}
	p := a.Path()
	if filepath.Dir(p) != filepath.Join(state, Dir) || filepath.Base(p) != a.Name {
		t.Fatalf("Path() = %s, want %s in %s", p, a.Name, filepath.Join(state, Dir))
	}
	if Dead(p) {
		t.Error("a held mark is dead")
	}
	a.f.Close() // the run died, its mark left unlocked
	if !Dead(p) {
		t.Error("a mark no run holds is not dead")
	}
	b, err := Hold(state) // sweeps a's
	if err != nil {
		t.Fatal(err)
	}
	if !Dead(p) || Dead(b.Path()) {
		t.Errorf("after the sweep: Dead(a) = %v, Dead(b) = %v; want true, false", Dead(p), Dead(b.Path()))
	}
	b.Release()
	if !Dead(b.Path()) {
		t.Error("a released mark is not dead")
	}
	// Not a mark's path: nothing can be told.
	other := filepath.Join(state, "run-x")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"", "runs/run-x", other, filepath.Join(state, Dir, ".run-x"), filepath.Join(state, Dir)} {
		if Dead(q) {
			t.Errorf("Dead(%q) is true", q)
		}
	}
}

func entries(t *testing.T, state string) []string {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(state, Dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// BenchmarkHoldRelease is what a run mark adds to a docker or krun launch (and a bwrap
// one with /tmp in memory).
func BenchmarkHoldRelease(b *testing.B) {
	state := b.TempDir()
	for b.Loop() {
		m, err := Hold(state)
		if err != nil {
			b.Fatal(err)
		}
		m.Release()
	}
}

// TestHoldSharedWaitsForPrune: while prune holds the project's lock, no mark is made
// (prune's check would miss it); the wait ends with ctx, and with the lock free the
// mark is made.
func TestHoldSharedWaitsForPrune(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "app-0123abcd")
	unlock, ok, err := projlock.TryExclusive(root, "app-0123abcd")
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := HoldShared[struct{}](ctx, state, cancel, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("HoldShared while prune holds the lock: %v, want context.Canceled", err)
	}
	if Held(state, "", time.Now()) {
		t.Error("a mark was made while prune held the lock")
	}
	unlock()
	m, err := HoldShared[struct{}](context.Background(), state, func() { t.Error("waited with the lock free") }, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	if !Held(state, "", time.Now()) {
		t.Error("HoldShared made no mark")
	}
}

// Where names this boot and mount namespace: the same for every call, and "" never
// on Linux (where "" would make no run remove a dead run's container).
func TestWhere(t *testing.T) {
	w := Where()
	if w == "" || w != Where() || !strings.Contains(w, "/mnt:") {
		t.Errorf("Where() = %q, want a stable boot id and mount namespace", w)
	}
}
