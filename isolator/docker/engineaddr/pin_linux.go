package engineaddr

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Pin opens a's Unix socket and returns a holding it: every later connection
// (DialPath) goes to that very socket, and HostNetwork's check is asked of it, so a
// socket swapped in at the path afterwards (where the user may write: a rootless
// engine's $XDG_RUNTIME_DIR/docker.sock, a relay's directory) is never dialled and
// never judged in its place. A link at the path is followed here, once: what it led
// to is what is checked and dialled. Another address is returned as it is. The
// socket stays open while a copy of the returned address, or a client dialling
// through it, is reachable (the file's finalizer closes it).
func (a Address) Pin() (Address, error) {
	sock, ok := unixSocket(a.Host)
	if !ok || a.pin != nil {
		return a, nil
	}
	f, err := os.OpenFile(sock, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return a, err
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeSocket == 0 {
		f.Close()
		return a, fmt.Errorf("%s is %w", sock, ErrNotSocket)
	}
	a.pin = &pinned{f: f, path: "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))}
	return a, nil
}
