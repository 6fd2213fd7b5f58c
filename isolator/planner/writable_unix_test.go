//go:build unix

package planner

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

// TestReadWritableRefusesWhatASandboxLeft: the files a launch reads that a sandbox
// could have written (.miserc.toml through readPresent; git's pointer files and config
// through readRegular) are read only when regular: a FIFO does not hang the launch, a
// link to /dev/zero or a huge file does not fill the host's memory, and readRegular
// refuses a link. A link to a regular file is followed where mise and git follow it.
func TestReadWritableRefusesWhatASandboxLeft(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "regular")
	if err := os.WriteFile(file, []byte("env = \"qa\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge")
	if err := os.WriteFile(huge, []byte(strings.Repeat("#", maxWritableFile+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{"to-fifo": fifo, "to-zero": "/dev/zero", "to-file": file}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	pr := OS(dir)
	readers := map[string]func(string) ([]byte, error){
		"readPresent": pr.readPresent,
		"readRegular": func(p string) ([]byte, error) { return readRegular(pr, p) },
	}
	cases := []struct {
		name        string
		wantPresent error // nil: read
		wantRegular error // nil: read
	}{
		{"regular", nil, nil},
		{"fifo", rawfile.ErrNotRegular, rawfile.ErrNotRegular},
		{"huge", rawfile.ErrTooLarge, rawfile.ErrTooLarge},
		{"to-fifo", rawfile.ErrNotRegular, rawfile.ErrNotRegular},
		{"to-zero", rawfile.ErrNotRegular, rawfile.ErrNotRegular},
		{"to-file", nil, rawfile.ErrNotRegular},
	}
	for _, tc := range cases {
		for rname, read := range readers {
			want := tc.wantPresent
			if rname == "readRegular" {
				want = tc.wantRegular
			}
			done := make(chan error, 1)
			go func() {
				_, err := read(filepath.Join(dir, tc.name))
				done <- err
			}()
			select {
			case err := <-done:
				if want == nil && err != nil || want != nil && !errors.Is(err, want) {
					t.Errorf("%s(%s): error %v, want %v", rname, tc.name, err, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s(%s): still reading after 10 s", rname, tc.name)
			}
		}
	}
	// A .miserc.toml too large to read is a warning: its names are not protected.
	_, warns := readMiserc(pr.readPresent, []string{huge, fifo})
	if len(warns) != 1 || !strings.HasPrefix(warns[0], huge+" is larger than devsandbox reads") {
		t.Errorf("readMiserc warnings: %q", warns)
	}
}
