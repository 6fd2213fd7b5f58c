package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Writer defaults.
const (
	DefaultMaxBytes = 10 << 20
	DefaultKeep     = 3
)

// Writer appends Records to dir/LogFile (mode 0600), rotating the file once it would
// grow beyond maxBytes and keeping keep rotated files. Safe for concurrent use.
type Writer struct {
	mu     sync.Mutex
	path   string
	max    int64
	keep   int
	f      *os.File
	size   int64
	closed bool
}

// Open opens the log in dir for appending, creating dir (0700) and the file as needed.
// keep 0 keeps no rotated file.
func Open(dir string, maxBytes int64, keep int) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the proxy log directory: %w", err)
	}
	w := &Writer{path: filepath.Join(dir, LogFile), max: maxBytes, keep: keep}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Writer) open() error {
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("opening the proxy log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("opening the proxy log: %w", err)
	}
	w.f, w.size = f, fi.Size()
	return nil
}

// Write appends rec as one line; after Close it does nothing.
func (w *Writer) Write(rec Record) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	if w.size > 0 && w.size+int64(len(line)) > w.max {
		if err := w.rotate(); err != nil {
			return err
		}
	}
	n, err := w.f.Write(line)
	w.size += int64(n)
	return err
}

// rotate shifts LogFile.i to LogFile.i+1, dropping the oldest, and starts a new file.
func (w *Writer) rotate() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("rotating the proxy log: %w", err)
	}
	for i := w.keep; i >= 1; i-- {
		err := os.Rename(rotatedName(w.path, i-1), rotatedName(w.path, i))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rotating the proxy log: %w", err)
		}
	}
	if w.keep == 0 {
		os.Remove(w.path)
	}
	return w.open()
}

func rotatedName(path string, i int) string {
	if i == 0 {
		return path
	}
	return fmt.Sprintf("%s.%d", path, i)
}

// Close syncs and closes the file; later writes are dropped. It may be called again.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	return errors.Join(w.f.Sync(), w.f.Close())
}
