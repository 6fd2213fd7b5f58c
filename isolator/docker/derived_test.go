package docker

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/docker/docker/api/types/image"

	"github.com/devsandbox/devsandbox/isolator/container"
)

// TestDerivedImageConcurrent: the first runs of a devsandbox build start at once (a
// harness's parallel jobs) and all need the derived image, which no one has made yet.
// One of them makes it and every run gets that image: equal images of different IDs
// give equal runs different specs, and runs that keep a container then refuse each
// other ("kept container in use with another configuration").
func TestDerivedImageConcurrent(t *testing.T) {
	for round := range 10 {
		derivedConcurrently(t, round)
	}
}

func derivedConcurrently(t *testing.T, round int) {
	f := newFake(t)
	f.loadable = round%2 == 1
	b, p := testIsolator(t, f, false)
	pr, err := b.ship(p, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	files := []container.ImageFile{{Path: "/etc/devsandbox/x", Content: []byte("x")}}
	const runs = 8
	ids := make([]string, runs)
	errs := make([]error, runs)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			// Each run is a process of its own (devsandbox-docker): no state shared
			// but the state directory and the engine.
			ids[i], _, errs[i] = (&Isolator{Options: b.Options}).derivedImage(context.Background(), f, Address{Host: "unix:///fake.sock"}, p, b.Options.Image, pr, files, nil)
		}()
	}
	close(start)
	wg.Wait()
	for i := range runs {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("round %d, run %d: image %q, %v; want the one image %q", round, i, ids[i], errs[i], ids[0])
		}
	}
	if f.commits+f.loads != 1 {
		t.Fatalf("round %d: %d images committed, %d loaded, want 1 in all", round, f.commits, f.loads)
	}
}

// TestDerivedImageByContent: the image a run derives is named by its content; a run
// whose state directory has no record of it (a CI runner's fresh home) uses the
// image of that ID the engine has, loads nothing and says nothing; an image of
// another ID that carries the same labels (anyone with access to the engine can
// copy them) is never used: the run loads its own.
func TestDerivedImageByContent(t *testing.T) {
	f := newFake(t)
	f.loadable = true
	b, p := testIsolator(t, f, false)
	var progress strings.Builder
	b.Progress = &progress
	pr, err := b.ship(p, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	files := []container.ImageFile{{Path: "/etc/passwd", Content: []byte("root:x:0:0::/root:/bin/sh\n")}}
	derived := func() string {
		t.Helper()
		id, _, err := (&Isolator{Options: b.Options, Progress: &progress}).derivedImage(context.Background(), f, Address{Host: "unix:///fake.sock"}, p, b.Options.Image, pr, files, nil)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	freshState := func() { p.StateDir = filepath.Join(t.TempDir(), "app") }

	id := derived()
	in := f.derived[id]
	if f.loads != 1 || f.commits != 0 || strings.Count(progress.String(), "preparing the image") != 1 {
		t.Fatalf("first run: %d loads, %d commits, progress %q", f.loads, f.commits, progress.String())
	}
	if string(f.copied["load:/run/devsandbox/init"]) != "INIT" || string(f.copied["load:/etc/passwd"]) != string(files[0].Content) {
		t.Errorf("the loaded layer: %q", slices.Sorted(maps.Keys(f.copied)))
	}
	if in.Config.Entrypoint[0] != container.InitPath || in.Config.Cmd != nil || in.Config.Env[0] != "PATH=/bin" || in.Config.Labels["base"] != "1" ||
		in.Config.Labels[LabelBase] != "sha256:base-devsandbox/default:1.0" || in.Config.Labels[LabelVersion] != "1.0" || len(in.RootFS.Layers) != 2 {
		t.Errorf("the loaded image: %+v %+v", in.Config, in.RootFS)
	}
	// Named once loaded: the engine's record of that time is its age for prune (its
	// Created is its base's).
	if in.Metadata.LastTagTime.IsZero() {
		t.Errorf("the loaded image was not named: no LastTagTime")
	}

	freshState()
	progress.Reset()
	if again := derived(); again != id || f.loads != 1 || f.commits != 0 || progress.Len() != 0 {
		t.Fatalf("a run with a fresh state: image %s (want %s), %d loads, %d commits, progress %q", again, id, f.loads, f.commits, progress.String())
	}

	// A forgery: the genuine image's labels, other content; the genuine one gone.
	f.mu.Lock()
	delete(f.derived, id)
	forged := in
	forged.ID = "sha256:" + strings.Repeat("f", 64)
	f.derived[forged.ID] = forged
	f.mu.Unlock()
	freshState()
	if got := derived(); got != id || f.loads != 2 {
		t.Fatalf("with a forged image of the same labels: image %s (want %s, made again), %d loads", got, id, f.loads)
	}
	if slices.Contains(f.derives, "ImageInspect "+forged.ID) {
		t.Errorf("the forged image was looked at: %q", f.derives)
	}
}

// BenchmarkDerive: what a cache miss computes before it asks the engine for the
// image by its ID: the programs read (as large as devsandbox's: about 12 MB),
// hashed and archived.
func BenchmarkDerive(b *testing.B) {
	pr := programs{arch: "amd64", init: program{data: make([]byte, 3_700_000)}, proxy: program{data: make([]byte, 8_200_000)}}
	files := []container.ImageFile{{Path: "/etc/passwd", Content: []byte("root:x:0:0::/root:/bin/sh\n")}}
	bi := image.InspectResponse{ID: "sha256:base", Os: "linux", Architecture: "amd64", RootFS: image.RootFS{Type: "layers", Layers: []string{"sha256:" + strings.Repeat("b", 64)}}}
	for b.Loop() {
		if _, err := derive(bi, "base", "1.0", 1000, pr, files); err != nil {
			b.Fatal(err)
		}
	}
}
