package planner

import (
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// lookPath reports whether exec.LookPath would find name in the search path
// pathList, asking stat (Build's cache: tools.FindExecutable asks the same paths
// again for a tool that is found, and absent names below a listed directory cost no
// system call). As in exec.LookPath, the first entry that is no directory and that
// the effective user may execute (faccessat2 with AT_EACCESS) is found; a directory
// that appears twice (under two names) is searched once. A search path
// with a relative entry, or a name with a slash, is left to exec.LookPath.
func lookPath(pathList, name string, stat func(string) (fs.FileInfo, error)) bool {
	dirs := filepath.SplitList(pathList)
	relative := name == "" || strings.Contains(name, "/")
	for _, d := range dirs {
		relative = relative || !filepath.IsAbs(d)
	}
	if relative {
		_, err := exec.LookPath(name)
		return err == nil
	}
	type dirID struct{ dev, ino uint64 }
	searched := make([]dirID, 0, len(dirs))
	for _, d := range dirs {
		// A directory already searched under another name (/bin, a link to /usr/bin)
		// answers the same.
		if fi, err := stat(d); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				id := dirID{uint64(st.Dev), uint64(st.Ino)}
				if slices.Contains(searched, id) {
					continue
				}
				searched = append(searched, id)
			}
		}
		p := filepath.Join(d, name)
		if fi, err := stat(p); err != nil || fi.IsDir() {
			continue
		}
		if unix.Faccessat(unix.AT_FDCWD, p, unix.X_OK, unix.AT_EACCESS) == nil {
			return true
		}
	}
	return false
}
