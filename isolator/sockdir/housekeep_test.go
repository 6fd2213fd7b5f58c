package sockdir

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// PruneTemp removes a temporary socket directory of the user's that no state records,
// nobody holds and that is over a minute old; it keeps a recorded one, a held one, one
// whose socket a session serves, a young one, another name, and a link (neither
// followed nor removed). A dry run names the same and removes nothing.
func TestPruneTemp(t *testing.T) {
	tmp, root := shortTemp(t), t.TempDir()
	uid := os.Getuid()
	h := Host{TempDir: tmp, UID: uid}
	old := time.Now().Add(-time.Hour)
	mk := func(name string, when time.Time) string { return socketDirAt(t, tmp, name, when) }
	p := tempPrefix(uid)
	orphan := mk(p+"orphan01", old)
	recordedDir := mk(p+"recorded", old)
	held := mk(p+"held0001", old)
	young := mk(p+"young001", time.Now())
	other := mk("devsandbox-other-1", old)
	target := mk("target", old)
	link := filepath.Join(tmp, p+"linked01")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "proj-1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeRecord(filepath.Join(root, "proj-1", recordName), recordedDir, false); err != nil {
		t.Fatal(err)
	}
	release, err := Hold(held)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	// A session of a build that takes no lock: a socket it serves keeps the directory.
	served := mk(p+"served01", old)
	ln, err := net.Listen("unix", filepath.Join(served, "publish-x", "8000.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chtimes(served, old, old); err != nil {
		t.Fatal(err)
	}
	want := []string{orphan}
	for _, dry := range []bool{true, false} {
		got, err := PruneTemp(h, root, time.Now(), dry)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("dry run %v: %q, %v; want %q", dry, got, err, want)
		}
		if _, err := os.Lstat(orphan); (err == nil) != dry {
			t.Errorf("dry run %v: the orphan is there: %v", dry, err == nil)
		}
	}
	for _, d := range []string{recordedDir, held, served, young, other, link, filepath.Join(target, "publish-x")} {
		if _, err := os.Lstat(d); err != nil {
			t.Errorf("%s was removed", d)
		}
	}
}

// RemoveRecorded removes a directory devsandbox names in a temporary directory; it
// leaves a link, one a session holds (ErrInUse), and a path of another name.
func TestRemoveRecorded(t *testing.T) {
	tmp := shortTemp(t)
	uid := os.Getuid()
	p := tempPrefix(uid)
	d := filepath.Join(tmp, p+"abcdefgh")
	if err := os.MkdirAll(filepath.Join(d, "agent"), 0o700); err != nil {
		t.Fatal(err)
	}
	release, err := Hold(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := RemoveRecorded(d, uid); !errors.Is(err, ErrInUse) {
		t.Errorf("a held directory: %v, want ErrInUse", err)
	}
	release()
	if err := RemoveRecorded(d, uid); err != nil {
		t.Errorf("an unheld directory: %v", err)
	}
	if _, err := os.Lstat(d); err == nil {
		t.Error("the unheld directory is still there")
	}
	target := filepath.Join(tmp, "target")
	if err := os.MkdirAll(filepath.Join(target, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, d); err != nil {
		t.Fatal(err)
	}
	if err := RemoveRecorded(d, uid); err == nil {
		t.Error("a link at the name was taken for the directory")
	}
	if fi, err := os.Lstat(d); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(target, "x")); err != nil {
		t.Errorf("the link was followed: %v", err)
	}
	if err := RemoveRecorded(target, uid); err == nil {
		t.Error("a directory of another name was removed")
	}
}

// Hold fails with ErrGone when the directory was removed before its lock was taken,
// and a removal waits for no holder: it leaves the held directory.
func TestHoldGone(t *testing.T) {
	d := filepath.Join(shortTemp(t), "s")
	if _, err := Hold(d); !errors.Is(err, ErrGone) {
		t.Errorf("a missing directory: %v, want ErrGone", err)
	}
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	// A prune holds it: Hold waits, and finds it gone once the prune has removed it.
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		release, err := Hold(d)
		if err == nil {
			release()
		}
		done <- err
	}()
	if err := os.Remove(d); err != nil {
		t.Fatal(err)
	}
	unix.Flock(fd, unix.LOCK_UN)
	if err := <-done; !errors.Is(err, ErrGone) {
		t.Errorf("a directory removed under the lock: %v, want ErrGone", err)
	}
}

// socketDirAt makes name in parent as a session leaves a socket directory (one
// publish directory in it), last modified at when.
func socketDirAt(t *testing.T, parent, name string, when time.Time) string {
	t.Helper()
	d := filepath.Join(parent, name)
	if err := os.MkdirAll(filepath.Join(d, "publish-x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(d, when, when); err != nil {
		t.Fatal(err)
	}
	return d
}
