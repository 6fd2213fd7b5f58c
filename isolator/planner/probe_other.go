//go:build !linux

package planner

import (
	"errors"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// readDirN is Probe.ReadDirN on the host.
func readDirN(dir string, n int) ([]fs.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(n)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return ents, err
}

// readNames is Probe.ReadNames on the host.
func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// listNames returns the names in dir, or nil when it cannot be read, holds more than
// listedMax names, or may not be searched (see statCache.listDirs).
func listNames(dir string) (map[string]struct{}, error) {
	if err := unix.Access(dir, unix.X_OK); err != nil {
		return nil, err
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(listedMax + 1)
	if err != nil && !errors.Is(err, io.EOF) || len(names) > listedMax {
		return nil, err
	}
	set := make(map[string]struct{}, len(names))
	for _, n := range names {
		set[n] = struct{}{}
	}
	return set, nil
}
