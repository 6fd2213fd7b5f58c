//go:build !linux

package sockdir

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// anyLive reports whether one of the *.sock sockets in the publish directory d accepts
// a connection. Only Linux sessions (bwrap, krun) write a publish directory a sandbox
// can reach; here a socket is checked with Lstat and dialled by name.
func anyLive(d string) bool {
	socks, _ := filepath.Glob(filepath.Join(d, "*.sock"))
	return slices.ContainsFunc(socks, func(s string) bool {
		fi, err := os.Lstat(s)
		return err == nil && fi.Mode().Type() == fs.ModeSocket && !stale(s)
	})
}
