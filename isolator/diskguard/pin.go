package diskguard

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// PinStatfs opens each of paths that exists (following a link there once, as
// statfs would) and returns a Statfs that reads the file system of what it opened,
// whatever is at the path later: the sandbox can rename a watched directory it can
// reach (a writable bind below the project, whose directories are the sandbox's to
// move) and put a link to another file system in its place; a guard that looked
// the path up at each tick then skipped it as missing, or watched where the link
// led. A path missing at the start stays unwatched (ErrNotExist, as Check skips
// it), whatever is made there later. Another error to open one is returned (the run
// does not start: fail closed). release closes what was opened.
func PinStatfs(paths []string) (statfs Statfs, release func(), err error) {
	files, err := pinPaths(paths)
	if err != nil {
		return nil, nil, err
	}
	return pinned(files), func() { closeAll(files) }, nil
}

// pinPaths is PinStatfs's opens: each path that exists, to its descriptor.
func pinPaths(paths []string) (map[string]int, error) {
	files := make(map[string]int, len(paths))
	for _, p := range paths {
		if _, ok := files[p]; ok {
			continue
		}
		fd, err := openPin(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			closeAll(files)
			return nil, fmt.Errorf("opening %s to watch its free space for sandbox.disk_reserve: %w", p, err)
		}
		files[p] = fd
	}
	return files, nil
}

// pinned is the Statfs of the descriptors files holds, by path.
func pinned(files map[string]int) Statfs {
	return func(p string) (uint64, error) {
		fd, ok := files[p]
		if !ok {
			return 0, fmt.Errorf("%s was missing when the run started: %w", p, os.ErrNotExist)
		}
		return fdStatfs(fd)
	}
}

func closeAll(fds map[string]int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
