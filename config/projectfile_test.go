//go:build unix

package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/internal/rawfile"
)

// TestProjectFileNotRegular: a .devsandbox.toml a sandboxed run left as a FIFO, a link
// to /dev/zero or a huge file stops Load, Trust and CheckTrust at once with an *Error
// naming the file, instead of hanging the launch on the FIFO or filling the host's
// memory; a link to a regular file is still read (trust is by content).
func TestProjectFileNotRegular(t *testing.T) {
	home, environ := testHome(t)
	dir, file, host := project(t, home, environ, "[docker]\nimage = \"proj:1\"\n")
	target := writeFile(t, filepath.Join(home, "elsewhere.toml"), "[docker]\nimage = \"proj:2\"\n")
	cases := []struct {
		name  string
		plant func(t *testing.T)
		want  error // nil: read as a file
	}{
		{"fifo", func(t *testing.T) { mkfifo(t, file) }, rawfile.ErrNotRegular},
		{"link to /dev/zero", func(t *testing.T) { symlink(t, "/dev/zero", file) }, rawfile.ErrNotRegular},
		{"link to a fifo", func(t *testing.T) { mkfifo(t, file+".fifo"); symlink(t, file+".fifo", file) }, rawfile.ErrNotRegular},
		{"directory", func(t *testing.T) {
			if err := os.Mkdir(file, 0o755); err != nil {
				t.Fatal(err)
			}
		}, rawfile.ErrNotRegular},
		{"huge", func(t *testing.T) {
			writeFile(t, file, "# "+strings.Repeat("x", maxProjectFile)+"\n")
		}, rawfile.ErrTooLarge},
		{"link to a file", func(t *testing.T) { symlink(t, target, file) }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.RemoveAll(file); err != nil {
				t.Fatal(err)
			}
			os.Remove(file + ".fifo")
			tc.plant(t)
			calls := map[string]func() error{
				"Load": func() error {
					_, _, err := Load(LoadOptions{ProjectDir: dir, Environ: environ, UID: 1000, GID: 1000})
					return err
				},
				"Trust": func() error {
					_, err := Trust(host, file, trustTime)
					return err
				},
				"CheckTrust": func() error {
					_, err := CheckTrust(host, file)
					return err
				},
			}
			for name, call := range calls {
				done := make(chan error, 1)
				go func() { done <- call() }()
				var err error
				select {
				case err = <-done:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: still reading %s after 10 s", name, file)
				}
				if tc.want == nil {
					if err != nil {
						t.Errorf("%s: %v", name, err)
					}
					continue
				}
				if !errors.Is(err, tc.want) {
					t.Errorf("%s: error %v, want %v", name, err, tc.want)
					continue
				}
				if ce := asConfigError(t, err); ce.File != file {
					t.Errorf("%s: error names %q, want %q", name, ce.File, file)
				}
			}
		})
	}
}

func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}
