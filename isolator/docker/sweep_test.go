package docker

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/volume"

	"github.com/devsandbox/devsandbox/isolator"
)

func TestLeftoverContainer(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	old, young := now.Add(-2*leftoverAge).Unix(), now.Add(-time.Second).Unix()
	for _, tc := range []struct {
		name string
		c    dockercontainer.Summary
		want bool
	}{
		{"stopped one-shot", dockercontainer.Summary{State: "exited", Created: young, Labels: map[string]string{LabelKept: "false"}}, true},
		{"dead companion", dockercontainer.Summary{State: "dead", Created: young, Labels: map[string]string{LabelKept: "false", LabelRole: roleCompanion}}, true},
		{"old never started", dockercontainer.Summary{State: "created", Created: old, Labels: map[string]string{LabelKept: "false"}}, true},
		{"young never started: a concurrent run's", dockercontainer.Summary{State: "created", Created: young, Labels: map[string]string{LabelKept: "false"}}, false},
		{"running companion (a kept container's)", dockercontainer.Summary{State: "running", Created: old, Labels: map[string]string{LabelKept: "false", LabelRole: roleCompanion}}, false},
		{"stopped kept container", dockercontainer.Summary{State: "exited", Created: old, Labels: map[string]string{LabelKept: "true"}}, false},
		{"home volume's helper, stopped", dockercontainer.Summary{State: "exited", Created: young, Labels: map[string]string{}}, true},
	} {
		if got := leftoverContainer(tc.c, now); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLeftoverVolume(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	old, young := now.Add(-2*leftoverAge).Format(time.RFC3339), now.Add(-time.Second).Format(time.RFC3339)
	gone := func(l string) (bool, bool) { return l == "gone", l == "gone" || l == "alive" }
	for _, tc := range []struct {
		name   string
		labels map[string]string
		at     string
		want   bool
	}{
		{"init volume, its container gone", map[string]string{LabelRole: roleInit}, young, true},
		{"session volume, owner gone", map[string]string{LabelSession: "s", LabelOwner: "gone"}, young, true},
		{"session volume, owner alive", map[string]string{LabelSession: "s", LabelOwner: "alive"}, old, false},
		{"session volume, owner elsewhere, old", map[string]string{LabelSession: "s", LabelOwner: "other-host"}, old, true},
		{"session volume, owner elsewhere, young", map[string]string{LabelSession: "s", LabelOwner: "other-host"}, young, false},
		{"home volume", map[string]string{LabelName: "p"}, old, false},
		{"anchors' volume, unused a while", map[string]string{LabelName: "p", LabelRole: roleAnchor}, old, true},
		{"anchors' volume, just made or found", map[string]string{LabelName: "p", LabelRole: roleAnchor}, young, false},
		{"kept container's endpoint volume", map[string]string{LabelName: "p", LabelDir: "/p"}, old, false},
	} {
		v := &volume.Volume{Name: tc.name, Labels: tc.labels, CreatedAt: tc.at}
		if got := leftoverVolume(v, now, gone); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestOwnerGone(t *testing.T) {
	self := owner()
	if self == "" {
		t.Skip("no /proc")
	}
	if gone, known := ownerGone(self); gone || !known {
		t.Errorf("this process: gone %v known %v", gone, known)
	}
	var st string
	if s, err := startTime(os.Getpid()); err == nil {
		st = s
	}
	for _, l := range []string{"", "garbage", "other-boot/1/1", "x/y/z"} {
		if _, known := ownerGone(l); known {
			t.Errorf("%q: known", l)
		}
	}
	// This process's pid with another start time: a reused pid.
	reused := self[:len(self)-len(st)] + st + "0"
	if gone, known := ownerGone(reused); !gone || !known {
		t.Errorf("reused pid %q: gone %v known %v", reused, gone, known)
	}
}

func TestLeftoverContent(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	old, young := now.Add(-2*leftoverAge).Format(time.RFC3339), now.Add(-time.Second).Format(time.RFC3339)
	mp := "/var/lib/docker/volumes/devsandbox-p-content-00/_data"
	binds := func(src string) dockercontainer.Summary {
		return dockercontainer.Summary{State: "exited", Mounts: []dockercontainer.MountPoint{{Type: "bind", Source: src}}}
	}
	for _, tc := range []struct {
		name string
		at   string
		cs   []dockercontainer.Summary
		age  time.Duration
		want bool
	}{
		{"unbound, old", old, []dockercontainer.Summary{binds("/p")}, leftoverAge, true},
		{"unbound, young: a concurrent run's", young, nil, leftoverAge, false},
		{"unbound, young, no minimum age", young, nil, 0, true},
		{"bound by a container (a stopped kept one)", old, []dockercontainer.Summary{binds(mp + "/content")}, leftoverAge, false},
		{"bound, no minimum age", young, []dockercontainer.Summary{binds(mp + "/content")}, 0, false},
		{"another volume's file", old, []dockercontainer.Summary{binds(mp + "x/content")}, leftoverAge, true},
	} {
		v := &volume.Volume{Name: tc.name, Mountpoint: mp, CreatedAt: tc.at}
		if got := leftoverContent(v, tc.cs, now, tc.age); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A run sweeps the project's leftovers: a one-shot run and a kept run that creates,
// recreates or starts its container always; a warm run in the running kept container
// only when the last sweep is sweepEvery old, in the future or unrecorded. Each run
// waits for its sweep, which records its time.
func TestSweepWhen(t *testing.T) {
	f := newFake(t)
	b, p := testIsolator(t, f, true)
	stamp := filepath.Join(p.StateDir, sweepStamp)
	step := 0
	run := func(keep bool, what string, wantSweep bool) {
		t.Helper()
		step++
		before := f.sweeps
		b.Keep = keep
		start := time.Now().Add(-time.Second) // mtime granularity
		if _, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard}); err != nil {
			t.Fatalf("%d %s: %v", step, what, err)
		}
		if swept := f.sweeps > before; swept != wantSweep {
			t.Errorf("%d %s: swept %v, want %v", step, what, swept, wantSweep)
		}
		if fi, err := os.Stat(stamp); wantSweep && (err != nil || fi.ModTime().Before(start)) {
			t.Errorf("%d %s: the sweep's time is not recorded (%v)", step, what, err)
		}
	}
	setStamp := func(d time.Duration) {
		t.Helper()
		if err := os.Chtimes(stamp, time.Now().Add(d), time.Now().Add(d)); err != nil {
			t.Fatal(err)
		}
	}
	run(true, "kept container created", true)
	run(true, "warm, just swept", false)
	run(true, "warm, just swept", false)
	setStamp(-sweepEvery + time.Minute)
	run(true, "warm, swept a while ago", false)
	setStamp(-sweepEvery - time.Second)
	run(true, "warm, last sweep due", true)
	run(true, "warm after that", false)
	setStamp(time.Hour)
	run(true, "warm, a sweep in the future", true)
	if err := os.Remove(stamp); err != nil {
		t.Fatal(err)
	}
	run(true, "warm, no sweep recorded", true)
	f.mu.Lock()
	f.containers["devsandbox-app-0123abcd"].running = false
	f.mu.Unlock()
	run(true, "kept container stopped", true)
	run(false, "one-shot, just swept", true)
	run(false, "one-shot again", true)
	run(true, "warm", false)

	// A symbolic link in the stamp's place is neither followed nor trusted.
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-time.Hour)
	if err := os.Chtimes(target, time.Now(), long); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(stamp); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, stamp); err != nil {
		t.Fatal(err)
	}
	before := f.sweeps
	b.Keep = true
	if _, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard}); err != nil {
		t.Fatal(err)
	}
	if f.sweeps == before {
		t.Errorf("a link in the stamp's place made a warm run skip its sweep")
	}
	if fi, err := os.Stat(target); err != nil || !fi.ModTime().Equal(long) {
		t.Errorf("the sweep's time was written through a link in the stamp's place")
	}
}

// The content volumes no container binds are swept, but never one of a project a run
// is going on in (busy: the run may have made or found it, however old, and binds it
// next), and in a run's sweep not one made a moment ago either.
func TestSweepContentInUse(t *testing.T) {
	now := time.Now()
	vol := func(name, project string, age time.Duration) *volume.Volume {
		return &volume.Volume{Name: name, Mountpoint: "/engine/volumes/" + name + "/_data", CreatedAt: now.Add(-age).Format(time.RFC3339),
			Labels: map[string]string{LabelRole: roleContent, LabelName: project}}
	}
	for _, tc := range []struct {
		what      string
		projectID string
		busy      []string
		want      []string
	}{
		{"sandboxes prune", "", []string{"b"}, []string{"devsandbox-a-content-old", "devsandbox-a-content-new"}},
		{"a run's sweep", "id-of-a", []string{"b"}, []string{"devsandbox-a-content-old"}},
	} {
		f := newFake(t)
		f.listed = []*volume.Volume{vol("devsandbox-a-content-old", "a", time.Hour), vol("devsandbox-a-content-new", "a", time.Second), vol("devsandbox-b-content-old", "b", time.Hour)}
		left, err := sweep(context.Background(), f, 1000, tc.projectID, "", now, true, tc.busy)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range left {
			got = append(got, l.Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s swept %v; want %v (never a busy project's)", tc.what, got, tc.want)
		}
	}
}
