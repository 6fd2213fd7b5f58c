package proxy

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
)

// ListenUnix listens on a Unix socket at path with mode 0600 and serves requests there
// without a credential: the file mode is the access control. The socket is bound in a
// fresh 0700 directory, made 0600, then renamed into place, so no other user can
// connect in between. A stale socket at path (nobody listening) is replaced; anything
// else there is an error. Shutdown removes the socket.
func (s *Server) ListenUnix(path string) error {
	if err := clearStaleSocket(path); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".p") // short: socket paths are limited to 107 bytes
	if err != nil {
		return fmt.Errorf("proxy: listening on %s: %w", path, err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return fmt.Errorf("proxy: listening on %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false) // the socket moves; Shutdown removes it by its final name
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("proxy: listening on %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		return fmt.Errorf("proxy: listening on %s: %w", path, err)
	}
	s.mu.Lock()
	s.unix = append(s.unix, path)
	s.mu.Unlock()
	s.serve(ln, false)
	return nil
}

// Serve serves requests on ln in the background until Shutdown, without a credential:
// whoever made ln controls who can connect (for example a Unix socket of mode 0600
// inherited from the process that bound it, or a TCP listener in a sandbox's own
// network namespace). Shutdown closes ln but removes no socket file; that is left to
// whoever bound it. Serve after Shutdown closes ln at once.
func (s *Server) Serve(ln net.Listener) {
	s.serve(ln, false)
}

func clearStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("proxy: listening on %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("proxy: listening on %s: %w (not a socket)", path, fs.ErrExist)
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return fmt.Errorf("proxy: listening on %s: %w (a server answers there)", path, fs.ErrExist)
	}
	return os.Remove(path)
}
