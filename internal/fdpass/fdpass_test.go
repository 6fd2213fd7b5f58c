package fdpass

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// First keeps the first descriptor a message carried and closes the others; a
// message without any, or control data that does not parse, gives -1.
func TestFirst(t *testing.T) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pair[0])
	defer unix.Close(pair[1])
	a, b, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	if err := unix.Sendmsg(pair[0], []byte{'r'}, unix.UnixRights(int(a.Fd()), int(b.Fd())), nil, 0); err != nil {
		t.Fatal(err)
	}
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(2*4))
	_, oobn, _, _, err := unix.Recvmsg(pair[1], buf, oob, 0)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		t.Fatalf("control messages: %v %v", msgs, err)
	}
	all, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(all) != 2 {
		t.Fatalf("passed descriptors: %v %v", all, err)
	}
	// ParseUnixRights only reads the numbers: First gets the same ones.
	fd := First(oob[:oobn])
	if fd != all[0] {
		t.Fatalf("First: %d, want %d", fd, all[0])
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatalf("the first descriptor: %v", err)
	}
	if err := unix.Fstat(all[1], &st); err != unix.EBADF {
		t.Fatalf("the second descriptor after First: %v, want EBADF (closed)", err)
	}
	if got := First(nil); got != -1 {
		t.Errorf("First(nil): %d, want -1", got)
	}
	if got := First([]byte{1, 2, 3}); got != -1 {
		t.Errorf("First of control data that does not parse: %d, want -1", got)
	}
}
