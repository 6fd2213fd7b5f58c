package pin

import (
	"os"
	"syscall"
)

// Removed lists the pinned sources that are no longer at their path: removed on the
// host, or replaced by another file, since they were pinned. bwrap resolves a
// descriptor's source through /proc/self/fd, which names a removed file "… (deleted)",
// so it stops with "Can't find source path /proc/self/fd/N": this says which one. It
// compares each path (following links, as the user's own links were followed) with
// the identity pinned, so it works after the descriptors were handed to bwrap and
// closed. It is for messages only: nothing is mounted by these paths. A nil Set has
// none.
func (s *Set) Removed() []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, src := range append(append([]*Source{}, s.Sources...), s.Empty) {
		if src == nil || src.path == "" {
			continue
		}
		fi, err := os.Stat(src.path)
		if err != nil {
			if os.IsNotExist(err) {
				out = append(out, src.path)
			}
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && (uint64(st.Dev) != src.ID.Dev || st.Ino != src.ID.Ino) {
			out = append(out, src.path)
		}
	}
	return out
}
