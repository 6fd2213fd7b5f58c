package sockdir

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// runtimeFixture is a private runtime directory with devsandbox/ in it.
func runtimeFixture(t *testing.T) (runtime, parent string) {
	t.Helper()
	runtime = shortTemp(t)
	if err := os.Chmod(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	parent = filepath.Join(runtime, "devsandbox")
	if err := os.Mkdir(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	return runtime, parent
}

// PruneRuntime removes a socket directory in $XDG_RUNTIME_DIR/devsandbox whose project
// has no state, nobody holds and that is over a minute old; it keeps a kept project's,
// a held one, one whose socket a session serves, a young one, krun's anchors-*
// directory (not a socket directory), and a link planted there
// toward a host directory (neither followed nor removed). A dry run names the same and
// removes nothing.
func TestPruneRuntime(t *testing.T) {
	runtime, parent := runtimeFixture(t)
	uid := os.Getuid()
	old := time.Now().Add(-time.Hour)
	mk := func(name string, when time.Time) string { return socketDirAt(t, parent, name, when) }
	orphan := mk("0ff1ce01", old)
	kept := mk("cafe0001", old)
	held := mk("4e1d0001", old)
	young := mk("70a49001", time.Now())
	host := filepath.Join(shortTemp(t), "host")
	if err := os.MkdirAll(filepath.Join(host, "precious"), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(parent, "11aced01")
	if err := os.Symlink(host, link); err != nil {
		t.Fatal(err)
	}
	release, err := Hold(held)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	served := mk("5e4ed001", old)
	ln, err := net.Listen("unix", filepath.Join(served, "publish-x", "8000.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chtimes(served, old, old); err != nil {
		t.Fatal(err)
	}
	anchors := mk("anchors-123", old) // a krun session's, not a socket directory
	want := []string{orphan}
	for _, dry := range []bool{true, false} {
		got, err := PruneRuntime(runtime, map[string]bool{"cafe0001": true}, uid, time.Now(), dry)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("dry run %v: %q, %v; want %q", dry, got, err, want)
		}
		if _, err := os.Lstat(orphan); (err == nil) != dry {
			t.Errorf("dry run %v: the orphan is there: %v", dry, err == nil)
		}
	}
	for _, d := range []string{kept, held, served, young, link, anchors, filepath.Join(host, "precious")} {
		if _, err := os.Lstat(d); err != nil {
			t.Errorf("%s was removed", d)
		}
	}
	// A devsandbox/ that is a link, or that others may enter, is not pruned.
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := PruneRuntime(runtime, nil, uid, time.Now(), false); err == nil || len(got) != 0 {
		t.Errorf("a devsandbox/ others may enter: %q, %v", got, err)
	}
}

// RemoveRuntime removes a project's socket directory in $XDG_RUNTIME_DIR/devsandbox,
// with what the sandbox left in it; it leaves one a session holds (ErrInUse), and a
// link planted at the project's name (neither followed nor removed).
func TestRemoveRuntime(t *testing.T) {
	runtime, parent := runtimeFixture(t)
	uid := os.Getuid()
	d := RuntimeDir(runtime, "abcd0123")
	if err := os.MkdirAll(filepath.Join(d, "publish-s", "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	release, err := Hold(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := RemoveRuntime(runtime, "abcd0123", uid); !errors.Is(err, ErrInUse) {
		t.Errorf("a held directory: %v, want ErrInUse", err)
	}
	release()
	if err := RemoveRuntime(runtime, "abcd0123", uid); err != nil {
		t.Errorf("an unheld directory: %v", err)
	}
	if _, err := os.Lstat(d); err == nil {
		t.Error("the unheld directory is still there")
	}
	if err := RemoveRuntime(runtime, "abcd0123", uid); err != nil {
		t.Errorf("a directory already gone: %v", err)
	}
	host := filepath.Join(shortTemp(t), "host")
	if err := os.MkdirAll(filepath.Join(host, "precious"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, filepath.Join(parent, "beef0123")); err != nil {
		t.Fatal(err)
	}
	if err := RemoveRuntime(runtime, "beef0123", uid); err == nil {
		t.Error("a link at the project's name was taken for its directory")
	}
	if fi, err := os.Lstat(filepath.Join(parent, "beef0123")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(host, "precious")); err != nil {
		t.Errorf("the link was followed: %v", err)
	}
	for _, id := range []string{"..", ".", "a/b", "", "anchors-123", "../../x"} {
		if err := RemoveRuntime(runtime, id, uid); err != nil {
			t.Errorf("id %q: %v", id, err)
		}
	}
	if _, err := os.Lstat(parent); err != nil {
		t.Errorf("devsandbox/ went: %v", err)
	}
}
