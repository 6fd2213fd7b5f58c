package sandboxinit

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// gatedWriter holds its first Write until open is closed, after telling entered.
type gatedWriter struct {
	buf     bytes.Buffer
	entered chan struct{}
	open    chan struct{}
	first   bool
}

func (g *gatedWriter) Write(b []byte) (int, error) {
	if !g.first {
		g.first = true
		close(g.entered)
		<-g.open
	}
	return g.buf.Write(b)
}

// TestOutCopyHeldWriteEnd: the command's stdout is also held by a process that
// outlives it (one outside the container it handed the descriptor to). Once the
// command exited, finish returns without the pipe's end, with everything the command
// wrote copied: what the copy had taken and what the pipe still held (the copy was
// busy writing to the container's stream when the command exited). The holder's
// later writes fail.
func TestOutCopyHeldWriteEnd(t *testing.T) {
	for name, held := range map[string]bool{"held": true, "not held": false} {
		t.Run(name, func(t *testing.T) {
			dst := &gatedWriter{entered: make(chan struct{}), open: make(chan struct{})}
			var errs bytes.Buffer
			o, err := newOutCopy(dst, &errs, false)
			if err != nil {
				t.Fatal(err)
			}
			holder := -1
			if held {
				if holder, err = unix.Dup(o.w[0]); err != nil {
					t.Fatal(err)
				}
				defer unix.Close(holder)
			}
			first := []byte("first line\n")
			if _, err := unix.Write(o.w[0], first); err != nil {
				t.Fatal(err)
			}
			<-dst.entered                                         // the copy took it and waits on the container's stream
			rest := bytes.Repeat([]byte("0123456789abcdef"), 250) // less than the pipe holds (a page): the write returns
			if _, err := unix.Write(o.w[0], rest); err != nil {
				t.Fatal(err)
			}
			o.started()
			finished := make(chan struct{})
			go func() {
				o.finish()
				close(finished)
			}()
			close(dst.open)
			select {
			case <-finished:
			case <-time.After(10 * time.Second):
				t.Fatal("finish waited for the end of a pipe another process holds")
			}
			if want := append(first, rest...); !bytes.Equal(dst.buf.Bytes(), want) {
				t.Errorf("copied %d bytes, want the %d the command wrote", dst.buf.Len(), len(want))
			}
			if held {
				if _, err := unix.Write(holder, []byte("late")); !errors.Is(err, unix.EPIPE) {
					t.Errorf("the holder's write after finish: %v, want EPIPE", err)
				}
			}
		})
	}
}

// TestOutCopyUntilEnd: while the command runs, its output is copied as it comes,
// more than a pipe holds included, up to the pipes' end.
func TestOutCopyUntilEnd(t *testing.T) {
	var out, errs bytes.Buffer
	o, err := newOutCopy(&out, &errs, false)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("x"), 300<<10)
	go func() {
		_, _ = unix.Write(o.w[1], []byte("to stderr"))
		for b := want; len(b) > 0; {
			n, err := unix.Write(o.w[0], b)
			if err != nil {
				return
			}
			b = b[n:]
		}
		o.started()
	}()
	<-o.done // both pipes ended, without finish
	o.finish()
	if !bytes.Equal(out.Bytes(), want) || errs.String() != "to stderr" {
		t.Errorf("copied %d bytes and stderr %q, want %d and %q", out.Len(), errs.String(), len(want), "to stderr")
	}
}

// TestPipeIOOneStream: with one stream the command's stdout and stderr are one pipe
// (its descriptors 1 and 2 the same, as `2>&1` gives), copied to stdout in the order
// written; nothing reaches stderr. Without, each has a pipe of its own.
func TestPipeIOOneStream(t *testing.T) {
	var out, errs bytes.Buffer
	p, err := newPipeIO(&out, &errs, true)
	if err != nil {
		t.Fatal(err)
	}
	fds := p.files()
	if fds[1] != fds[2] {
		t.Fatalf("the command's stdout and stderr are descriptors %d and %d, want one", fds[1], fds[2])
	}
	var want []byte
	for i := range 64 {
		fd, piece := fds[1+i%2], bytes.Repeat([]byte{byte('a' + i%26)}, 1000+i)
		want = append(want, piece...)
		for b := piece; len(b) > 0; {
			n, err := unix.Write(int(fd), b)
			if err != nil {
				t.Fatal(err)
			}
			b = b[n:]
		}
	}
	p.started()
	<-p.out.done // the pipe ended
	p.finish()
	p.r.Close()
	p.w.Close()
	if !bytes.Equal(out.Bytes(), want) || errs.Len() != 0 {
		t.Errorf("stdout got %d bytes (in order: %v), stderr %d; want %d and 0", out.Len(), bytes.Equal(out.Bytes(), want), errs.Len(), len(want))
	}

	two, err := newPipeIO(&out, &errs, false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { two.started(); two.finish(); two.r.Close(); two.w.Close() }()
	if fds := two.files(); fds[1] == fds[2] {
		t.Errorf("without one stream the command's stdout and stderr are both descriptor %d", fds[1])
	}
}
