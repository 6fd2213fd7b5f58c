package docker

import (
	"context"
	"sync"
	"testing"

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
			ids[i], errs[i] = (&Isolator{Options: b.Options}).derivedImage(context.Background(), f, Address{Host: "unix:///fake.sock"}, p, b.Options.Image, pr, files, nil)
		}()
	}
	close(start)
	wg.Wait()
	for i := range runs {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("round %d, run %d: image %q, %v; want the one image %q", round, i, ids[i], errs[i], ids[0])
		}
	}
	if f.commits != 1 {
		t.Fatalf("round %d: %d images made, want 1", round, f.commits)
	}
}
