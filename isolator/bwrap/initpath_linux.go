package bwrap

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator"
)

// initReachable reports whether init, a host path below the directory dir (a system
// path the view binds read-only at the same path), names an executable regular file
// reached from dir without a symbolic link, a magic link or a mount crossing. Then
// the sandbox, resolving the same path in its bind of dir, finds that very file: dir
// is bound as bwrap resolves it on the host, and nothing below it can resolve
// differently inside. A symbolic link could (its target is looked up in the
// sandbox's view, where the home and /tmp are the sandbox's own), and so could a
// mount below dir that the bind does not carry the same way; so either makes the
// init bound at InitPath instead, as it would be from anywhere else. So does a
// kernel without openat2 (before 5.6).
func initReachable(dir, init string) bool {
	if !isolator.Within(init, dir) || init == dir {
		return false
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(init, dir), "/")
	d, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(d)
	fd, err := unix.Openat2(d, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	})
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&0o111 != 0
}
