package sockdir

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/relay"
)

// The sweep checks a publish directory's socket and dials it through one descriptor:
// a live sandbox that swaps the socket for a link to a host socket between the check
// and the dial does not have the sweep connect to the host socket (it reaches the dead
// socket it checked, so the directory counts as dead).
func TestSweepDialFollowsNoSwappedLink(t *testing.T) {
	dir := t.TempDir()
	pub := filepath.Join(dir, "publish")
	if err := os.Mkdir(pub, 0o700); err != nil {
		t.Fatal(err)
	}
	dead, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(pub, "80.sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	dead.SetUnlinkOnClose(false)
	dead.Close()
	host, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "host.sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()

	dirFD, err := unix.Open(pub, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dirFD)
	fd, err := relay.OpenSocket(dirFD, "80.sock") // the check
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	// The swap, between the check and the dial.
	if err := os.Remove(filepath.Join(pub, "80.sock")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "host.sock"), filepath.Join(pub, "80.sock")); err != nil {
		t.Fatal(err)
	}
	if liveSocket(fd) {
		t.Error("the swapped-in link was followed: the dead socket counted as live")
	}
	// And the whole sweep check: the name is a link now, which is never dialled.
	if anyLive(pub) {
		t.Error("anyLive: a link counted as a live socket")
	}
}
