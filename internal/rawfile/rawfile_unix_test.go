//go:build unix

package rawfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// ReadFile returns what os.ReadFile does, and its error's cause.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	paths := []string{
		write("small.toml", "[sandbox]\nmode = \"enforce\"\n"),
		write("empty.toml", ""),
		write("big.toml", strings.Repeat("# padding\n", 5000)),
		"/proc/self/status", // stat says size 0; more than 512 bytes
	}
	for _, p := range paths {
		want, werr := os.ReadFile(p)
		got, err := ReadFile(p)
		if werr != nil || err != nil {
			t.Fatalf("%s: %v, os.ReadFile: %v", p, err, werr)
		}
		if p == "/proc/self/status" { // its own content differs from read to read; the size does not much
			if len(got) < 512 || !bytes.HasPrefix(got, []byte("Name:")) {
				t.Errorf("%s: read %d bytes: %.40q", p, len(got), got)
			}
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: read %d bytes, want %d", p, len(got), len(want))
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := ReadFile(dir); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("a directory: %v", err)
	}
}

// ReadRegularInfo counts the names of the file it read.
func TestReadRegularInfoLinks(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.toml")
	if err := os.WriteFile(p, []byte("x = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for want := uint64(1); want <= 3; want++ {
		b, info, err := ReadRegularInfo(p, 1<<10, true)
		if err != nil || string(b) != "x = 1\n" || info.Links != want {
			t.Errorf("%d names: %q, %+v, %v", want, b, info, err)
		}
		if err := os.Link(p, filepath.Join(dir, fmt.Sprint("link", want))); err != nil {
			t.Fatal(err)
		}
	}
}
