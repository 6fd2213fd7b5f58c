package isolator

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// sliceWriter is a writer whose type cannot be compared with ==.
type sliceWriter []byte

func (s sliceWriter) Write(b []byte) (int, error) { return len(b), nil }

// TestSharedOutput: one destination is shared (one writer, one open file, one
// pipe, one device, one file both append to); two are not, and neither are two
// opens of one file that each write at their own offset.
func TestSharedOutput(t *testing.T) {
	dir := t.TempDir()
	open := func(name string, flag int) *os.File {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|flag, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	dup := func(f *os.File) *os.File {
		fd, err := unix.Dup(int(f.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		d := os.NewFile(uintptr(fd), f.Name())
		t.Cleanup(func() { d.Close() })
		return d
	}
	pipe := func() *os.File {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		return w
	}
	null := func() *os.File {
		f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	var buf, other bytes.Buffer
	log, p := open("log", os.O_TRUNC), pipe()
	appendLog := open("append", os.O_APPEND)
	for _, c := range []struct {
		name     string
		out, err io.Writer
		want     bool
	}{
		{"one buffer", &buf, &buf, true},
		{"two buffers", &buf, &other, false},
		{"no stderr", &buf, nil, false},
		{"writers that cannot be compared", sliceWriter{}, sliceWriter{}, false},
		{"a buffer and a file", &buf, log, false},
		{"one *os.File", log, log, true},
		{"one open file twice (2>&1)", log, dup(log), true},
		{"two opens of one file", log, open("log", 0), false},
		{"two opens of one file, both appending", appendLog, open("append", os.O_APPEND), true},
		{"one appending, one not", appendLog, open("append", 0), false},
		{"two files", log, open("other", 0), false},
		{"one pipe twice", p, dup(p), true},
		{"two pipes", p, pipe(), false},
		{"one device opened twice", null(), null(), true},
		{"a pipe and a file", p, log, false},
	} {
		if got := SharedOutput(c.out, c.err); got != c.want {
			t.Errorf("%s: SharedOutput = %v, want %v", c.name, got, c.want)
		}
	}
}
