package container

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
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

// HostPodman runs podman on the host (`sandboxes rm`/`prune` removing a sandbox home
// that holds files of the user's subordinate uids). A podman on PATH in a directory
// a sandbox writes (a devsandbox project's .venv/bin) must not be run, and podman
// must not look its own helpers (newuidmap) up on the user's PATH.
func TestHostPodmanRunsNoPlantedPodman(t *testing.T) {
	d := t.TempDir()
	proj := filepath.Join(d, "proj")
	bin := filepath.Join(proj, ".venv", "bin")
	rec := filepath.Join(d, "data", "devsandbox", "proj-12345678")
	for _, dir := range []string{bin, rec} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(rec, "project"), []byte(proj+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(d, "ran")
	if err := os.WriteFile(filepath.Join(bin, "podman"), []byte("#!/bin/sh\necho \"$0 $*\" > "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	t.Setenv("XDG_DATA_HOME", filepath.Join(d, "data"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(d, "state"))
	out, err := HostPodman(context.Background(), "unshare", "true")
	if b, rerr := os.ReadFile(marker); rerr == nil {
		t.Fatalf("HostPodman ran the podman planted in a project, on the host: %s", b)
	}
	if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), filepath.Join(bin, "podman")) {
		t.Errorf("HostPodman = %q, %v; want a refusal naming the planted podman", out, err)
	}
}
