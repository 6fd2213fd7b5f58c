//go:build !linux

package pin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/devsandbox/devsandbox/isolator"
)

// walker elsewhere (macOS, where only the docker backend runs, and its engine sees
// files through a VM) checks each component with lstat and holds no descriptor: the
// init's comparison of identities is skipped there (another kernel), so the walk only
// refuses symlinks in the sandbox's writable directories.
type walker struct{ untrusted *roots }

func newWalker(untrusted *roots) *walker { return &walker{untrusted: untrusted} }

func (w *walker) close() {}

func (w *walker) open(p string) (*Source, error) {
	if !filepath.IsAbs(p) {
		return nil, fmt.Errorf("%s is not an absolute path", p)
	}
	p = filepath.Clean(p)
	for links := 0; links <= maxLinks; links++ {
		cur, restart := "/", false
		parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
		for i, c := range parts {
			if c == "" {
				continue
			}
			at := filepath.Join(cur, c)
			fi, err := os.Lstat(at)
			if err != nil {
				return nil, err
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				target, err := os.Readlink(at)
				if err != nil {
					return nil, err
				}
				if within(cur, w.untrusted.get()) {
					return nil, fmt.Errorf("%w: %s is a symlink (to %s) in a directory the sandbox can write; remove the link (a sandboxed program may have planted it)", ErrUntrustedLink, at, target)
				}
				if !filepath.IsAbs(target) {
					target = filepath.Join(cur, target)
				}
				p, restart = filepath.Join(append([]string{target}, parts[i+1:]...)...), true
				break
			}
			cur = at
		}
		if restart {
			continue
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		src := &Source{Dir: fi.IsDir(), path: p}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			src.ID = isolator.FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}
		}
		return src, nil
	}
	return nil, fmt.Errorf("%s: too many levels of symbolic links", p)
}
