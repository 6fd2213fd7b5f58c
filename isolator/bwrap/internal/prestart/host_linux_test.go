package prestart

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A forged record's source opens nothing: a FIFO (whose open for reading would block
// until a writer comes) or a device is refused after an O_PATH open, a link is not
// followed at the end or on the way.
func TestOpenSource(t *testing.T) {
	d := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(d, "dir"), 0o700))
	must(os.WriteFile(filepath.Join(d, "file"), []byte("x"), 0o600))
	must(syscall.Mkfifo(filepath.Join(d, "fifo"), 0o600))
	must(os.Symlink(filepath.Join(d, "dir"), filepath.Join(d, "link")))
	for _, ok := range []string{"dir", "file"} {
		f, id, err := OpenSource(filepath.Join(d, ok))
		if err != nil {
			t.Fatalf("%s: %v", ok, err)
		}
		got, err := Identify(f)
		if err != nil || got != id || id.Ino == 0 || id.MntID == 0 {
			t.Errorf("%s: identity %+v, again %+v (%v)", ok, id, got, err)
		}
		f.Close()
	}
	for _, bad := range []string{
		filepath.Join(d, "fifo"),
		"/dev/null",
		filepath.Join(d, "link"),
		filepath.Join(d, "link", "x"),
		filepath.Join(d, "missing"),
	} {
		f, _, err := OpenSource(bad)
		if !errors.Is(err, ErrUnsafe) {
			t.Errorf("OpenSource(%s) = %v, want ErrUnsafe", bad, err)
		}
		if f != nil {
			f.Close()
		}
	}
}

func TestHostFSPresent(t *testing.T) {
	d := t.TempDir()
	for _, p := range []string{"a/b", "real/c"} {
		if err := os.MkdirAll(filepath.Join(d, p), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(d, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(d, "l")); err != nil {
		t.Fatal(err)
	}
	src, _, err := OpenSource(d)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	h := HostFS{Sources: map[int]*os.File{5: src}}
	for _, tc := range []struct {
		rel     string
		present bool
		err     bool
	}{
		{".", true, false},
		{"a/b", true, false},
		{"f", true, false},
		{"a/missing", false, false},
		{"f/x", false, false},
		{"l", false, true},
		{"l/c", false, true},
	} {
		for _, s := range []Source{{FD: 5, Path: d}, {Path: d}} {
			got, err := h.Present(s, tc.rel)
			if got != tc.present || (err != nil) != tc.err {
				t.Errorf("Present(%+v, %s) = %v, %v; want %v, error %v", s, tc.rel, got, err, tc.present, tc.err)
			}
		}
	}
	if _, err := h.Present(Source{FD: 6}, "a"); err == nil {
		t.Error("Present of a descriptor not open: no error")
	}
}
