package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
)

// sockPlan is a plan whose state directory is under root, long when asked.
func sockPlan(root string, long bool) *isolator.Plan {
	state := filepath.Join(root, "state")
	if long {
		state = filepath.Join(root, strings.Repeat("s", 90))
	}
	return &isolator.Plan{StateDir: state, Project: isolator.Project{ID: "0badcafe", Name: "p-0badcafe"}}
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func TestSocketDirChoice(t *testing.T) {
	uid := os.Getuid()
	root := shortTemp(t)
	run := filepath.Join(root, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(root, "loose")
	if err := os.Mkdir(loose, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, runtime string
		want          string
	}{
		{"runtime dir", run, filepath.Join(run, "devsandbox", "0badcafe")},
		{"a runtime dir others may enter is not used", loose, filepath.Join(root, "state", "sock")},
		{"no runtime dir", "", filepath.Join(root, "state", "sock")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := socketDir(config.Host{UID: uid, RuntimeDir: tt.runtime}, sockPlan(root, false))
			if err != nil || got != tt.want {
				t.Fatalf("socketDir = %q, %v; want %q", got, err, tt.want)
			}
			if m := mode(t, got); m != os.ModeDir|0o700 {
				t.Errorf("mode %v, want drwx------", m)
			}
		})
	}
}

// TestSocketDirTemp: with no runtime dir and a state path too long for socket paths,
// the directory is a fresh private one in TMPDIR, the same for every session; one
// that changed owner, mode or kind since is replaced, never used.
func TestSocketDirTemp(t *testing.T) {
	uid := os.Getuid()
	tmp, root := shortTemp(t), t.TempDir()
	h := config.Host{UID: uid, Vars: map[string]string{"TMPDIR": tmp}}
	p := sockPlan(root, true)
	first, err := socketDir(h, p)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(first) != tmp || !strings.HasPrefix(filepath.Base(first), "devsandbox-"+strconv.Itoa(uid)+"-") || mode(t, first) != os.ModeDir|0o700 {
		t.Fatalf("first: %q, mode %v", first, mode(t, first))
	}
	if again, err := socketDir(h, p); err != nil || again != first {
		t.Fatalf("second session: %q, %v; want %q", again, err, first)
	}
	for _, spoil := range []func(d string) error{
		func(d string) error { return os.Chmod(d, 0o777) },
		func(d string) error {
			if err := os.Remove(d); err != nil {
				return err
			}
			return os.Symlink(t.TempDir(), d)
		},
		func(d string) error {
			return os.WriteFile(filepath.Join(p.StateDir, socketDirRecord), []byte(t.TempDir()+"\n"), 0o600)
		},
	} {
		prev, _ := socketDir(h, p)
		if err := spoil(prev); err != nil {
			t.Fatal(err)
		}
		got, err := socketDir(h, p)
		if err != nil || got == prev || filepath.Dir(got) != tmp || mode(t, got) != os.ModeDir|0o700 {
			t.Errorf("after spoiling %q: %q, %v", prev, got, err)
		}
	}
}

// TestSocketDirUnsafeTemp: a temporary directory others may write without the sticky
// bit, or that another user owns, is refused (125), never used.
func TestSocketDirUnsafeTemp(t *testing.T) {
	uid := os.Getuid()
	open := shortTemp(t)
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{"writable, not sticky": open}
	if uid == 0 {
		other := shortTemp(t)
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases["another user's"] = other
	}
	for name, tmp := range cases {
		_, err := socketDir(config.Host{UID: uid, Vars: map[string]string{"TMPDIR": tmp}}, sockPlan(t.TempDir(), true))
		if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "XDG_RUNTIME_DIR") {
			t.Errorf("%s: %v", name, err)
		}
		if names, _ := os.ReadDir(tmp); len(names) != 0 {
			t.Errorf("%s: created %v there", name, names)
		}
	}
}

// TestEnsurePrivate: existing components are checked with Lstat: a symlink or another
// user's directory is refused; one of ours that others may enter is made 0700.
func TestEnsurePrivate(t *testing.T) {
	uid := os.Getuid()
	base := shortTemp(t)
	if err := os.Mkdir(filepath.Join(base, "mine"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ensurePrivate(base, []string{"mine", "sub"}, uid); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"mine", "mine/sub"} {
		if m := mode(t, filepath.Join(base, d)); m != os.ModeDir|0o700 {
			t.Errorf("%s: %v", d, m)
		}
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	if err := ensurePrivate(base, []string{"link", "x"}, uid); !errors.Is(err, isolator.ErrProtection) {
		t.Errorf("through a symlink: %v", err)
	}
	if uid == 0 {
		if err := os.Mkdir(filepath.Join(base, "theirs"), 0o777); err != nil {
			t.Fatal(err)
		}
		_ = os.Chown(filepath.Join(base, "theirs"), 65534, 65534)
		if err := ensurePrivate(base, []string{"theirs"}, uid); !errors.Is(err, isolator.ErrProtection) {
			t.Errorf("another user's directory: %v", err)
		}
	}
}
