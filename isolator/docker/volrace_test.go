package docker

import (
	"context"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/volume"
)

// bothAskFirstEngine holds the first two inspects of a volume until both have come
// (two runs starting together, each finding no volume), and counts the copies into
// containers: the engine's unpacking of two copies of one file into one volume at
// once fails (`chmod /m/content: no such file or directory`, seen in CI).
type bothAskFirstEngine struct {
	*fakeEngine
	asked  atomic.Int32
	both   chan struct{}
	copies atomic.Int32
}

func (e *bothAskFirstEngine) VolumeInspect(ctx context.Context, name string) (volume.Volume, error) {
	v, err := e.fakeEngine.VolumeInspect(ctx, name)
	switch n := e.asked.Add(1); {
	case n == 2:
		close(e.both)
	case n < 2:
		select {
		case <-e.both:
		case <-time.After(30 * time.Second):
			e.t.Error("the second run never asked for the volume")
		}
	}
	return v, err
}

func (e *bothAskFirstEngine) CopyToContainer(ctx context.Context, id, dir string, content io.Reader, o dockercontainer.CopyToContainerOptions) error {
	e.copies.Add(1)
	return e.fakeEngine.CopyToContainer(ctx, id, dir, content, o)
}

// TestFileVolumeMadeOnce: two runs of this machine that start together and both find
// no content volume make it once (the second, once it holds the lock, finds it made)
// and both use it.
func TestFileVolumeMadeOnce(t *testing.T) {
	e := &bothAskFirstEngine{fakeEngine: newFake(t), both: make(chan struct{})}
	lock := filepath.Join(t.TempDir(), "docker-volumes.lock")
	labels := map[string]string{LabelRole: roleContent, LabelUser: "1000"}
	srcs := make([]string, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srcs[i], errs[i] = fileVolume(context.Background(), e, lock, "devsandbox/default:1.0", "the file /x", "devsandbox-p-content-1", labels, contentFile, []byte("x"), 0o444, 1000, 1000)
		}()
	}
	wg.Wait()
	for i := range srcs {
		if errs[i] != nil || srcs[i] != srcs[0] || srcs[i] == "" {
			t.Fatalf("run %d: %q, %v (the other: %q)", i, srcs[i], errs[i], srcs[0])
		}
	}
	if n := e.copies.Load(); n != 1 {
		t.Errorf("the file was copied into the volume %d times by two runs starting together, want once", n)
	}
}

// TestFileVolumeWaitsForItsMaker: a run that finds the volume while another run of
// this machine holds the volume lock (it made the volume and is still copying its
// file in) does not use it until the lock is released. CI once saw a run of a
// project take the content volume before its file was in it, fail on the engine's
// "bind source path does not exist", and remove the volume the other run was
// filling (TestEmbedOneProjectManyAtOnce/docker/kept).
func TestFileVolumeWaitsForItsMaker(t *testing.T) {
	e := newFake(t)
	lock := filepath.Join(t.TempDir(), "docker-volumes.lock")
	labels := map[string]string{LabelRole: roleContent, LabelUser: "1000"}
	use := func() error {
		_, err := fileVolume(context.Background(), e, lock, "devsandbox/default:1.0", "the file /x", "devsandbox-p-content-1", labels, contentFile, []byte("x"), 0o444, 1000, 1000)
		return err
	}
	if err := use(); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockFile(lock) // the other run, making a volume
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- use() }()
	select {
	case err := <-done:
		unlock()
		t.Fatalf("a run used the volume while a run making one held the lock (%v)", err)
	case <-time.After(300 * time.Millisecond): // a negative check: it must still wait
	}
	unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
