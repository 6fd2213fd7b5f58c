package container

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestRemoveAsPodman(t *testing.T) {
	var got []string
	podman := func(_ context.Context, args ...string) ([]byte, error) {
		got = args
		return nil, nil
	}
	if err := RemoveAsPodman(context.Background(), podman, "/h/data/devsandbox/p-1/home/"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"unshare", "rm", "-rf", "--one-file-system", "--", "/h/data/devsandbox/p-1/home"}; !slices.Equal(got, want) {
		t.Errorf("podman %q, want %q", got, want)
	}
	if err := RemoveAsPodman(context.Background(), podman, "home"); err == nil {
		t.Error("a relative path was removed")
	}
	fail := errors.New("exit status 1")
	podman = func(context.Context, ...string) ([]byte, error) {
		return []byte("rm: cannot remove 'x': Permission denied\n"), fail
	}
	err := RemoveAsPodman(context.Background(), podman, "/h/home")
	if want := "podman unshare rm -rf --one-file-system -- /h/home: exit status 1: rm: cannot remove 'x': Permission denied"; !errors.Is(err, fail) || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// SubIDOwned finds an entry of another uid (not root) below the directory, and
// follows no link to one elsewhere.
func TestSubIDOwned(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give files to another uid")
	}
	root := t.TempDir()
	home, other := filepath.Join(root, "home"), filepath.Join(root, "other")
	for _, d := range []string{filepath.Join(home, "a/b"), filepath.Join(other, "x")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(filepath.Join(other, "x"), 100000, 100000); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(home, "a/link")); err != nil {
		t.Fatal(err)
	}
	const uid = 1000
	if got, err := SubIDOwned(home, uid); err != nil || got != "" {
		t.Errorf("root's and linked entries: %q, %v; want none", got, err)
	}
	if err := os.Lchown(filepath.Join(home, "a/b"), 100000, 100000); err != nil {
		t.Fatal(err)
	}
	if got, err := SubIDOwned(home, uid); err != nil || got != filepath.Join(home, "a/b") {
		t.Errorf("got %q, %v; want %s", got, err, filepath.Join(home, "a/b"))
	}
	if got, _ := SubIDOwned(home, 100000); got != "" {
		t.Errorf("the user's own entry was found: %q", got)
	}
}
