//go:build linux

package companion

import (
	"bytes"
	"context"
	"io"
	"testing"

	"golang.org/x/sys/unix"
)

// dumpableReader records whether the process was dumpable when its request was
// first read.
type dumpableReader struct {
	read     bool
	dumpable int
}

func (r *dumpableReader) Read([]byte) (int, error) {
	if !r.read {
		r.read = true
		r.dumpable, _ = unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	}
	return 0, io.EOF
}

// The companion is not dumpable before it reads its request, where its secrets are:
// otherwise a process that another session of a kept container left in the
// companion, as the same user, reads them through /proc/PID/environ or mem.
func TestServeNotDumpableBeforeTheRequest(t *testing.T) {
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0) })
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	in := &dumpableReader{}
	var stderr bytes.Buffer
	Serve(context.Background(), in, io.Discard, &stderr, nil)
	if !in.read {
		t.Fatalf("Serve never read its request (stderr %q)", stderr.String())
	}
	if in.dumpable != 0 {
		t.Errorf("the companion read its request while dumpable (PR_GET_DUMPABLE = %d): another process of the companion, as the same user, could read its secrets", in.dumpable)
	}
}
