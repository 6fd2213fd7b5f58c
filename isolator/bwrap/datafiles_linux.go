package bwrap

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator"
)

// dataFiles returns the descriptors bwrap reads its --ro-bind-data / --file contents
// from, in the order of fs. A host file that is a regular file is passed as the file
// itself, opened read-only now: bwrap copies it and closes the descriptor before the
// sandbox runs, so nothing is read into devsandbox and no pipe or writer is needed (27
// files on a Debian host). Every other entry gets a pipe: content in memory (generated
// files, the seccomp program, secret files, read up front so a missing one aborts
// before launch) that a pipe surely holds is written into it now (filledPipe); the
// rest is fed in the background while bwrap starts, each source read only then. The returned channel yields the first error (or
// nil) once every pipe is written and closed. Pinned entries are the sources Run
// opened (pinned returns the descriptor of the rendered Plan's mount i); bwrap mounts
// them, and so does it the /etc snapshot directory etc opens.
func dataFiles(fs []File, pinned func(i int) *os.File, etc func() (*os.File, error)) ([]*os.File, <-chan error, error) {
	errc := make(chan error, 1)
	type job struct {
		w    *os.File
		f    File
		data []byte
	}
	var reads []*os.File
	var jobs []job
	fail := func(err error) ([]*os.File, <-chan error, error) {
		for _, r := range reads {
			r.Close()
		}
		for _, j := range jobs {
			j.w.Close()
		}
		return nil, nil, err
	}
	for _, f := range fs {
		if f.Kind == Pinned {
			if pinned == nil || pinned(f.Mount) == nil {
				return fail(fmt.Errorf("%w: no descriptor for the source of %s", isolator.ErrProtection, f.Dest))
			}
			reads = append(reads, pinned(f.Mount))
			continue
		}
		if f.Kind == EtcSnapshot {
			d, err := etc()
			if err != nil {
				return fail(err)
			}
			reads = append(reads, d)
			continue
		}
		if f.Kind == HostFile {
			if r := openRegular(f.Source); r != nil {
				reads = append(reads, r)
				continue
			}
		}
		var data []byte
		inMemory := f.Kind == SecretFile || f.Kind == Content || f.Kind == Seccomp
		if inMemory {
			var err error
			if data, err = fileData(f); err != nil {
				return fail(err)
			}
		}
		if inMemory && len(data) <= pipeMin {
			r, err := filledPipe(data)
			if err != nil {
				return fail(err)
			}
			reads = append(reads, r)
			continue
		}
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		reads = append(reads, r)
		jobs = append(jobs, job{w, f, data})
	}
	if len(jobs) == 0 {
		errc <- nil
		return reads, errc, nil
	}
	go func() {
		var first error
		for _, j := range jobs {
			data, err := j.data, error(nil)
			if data == nil {
				data, err = fileData(j.f)
			}
			if err == nil {
				_, err = j.w.Write(data)
			}
			if err != nil && first == nil {
				first = err
			}
			j.w.Close()
		}
		errc <- first
	}()
	return reads, errc, nil
}

// pipeMin is what a new pipe holds at the least: one page, the capacity Linux gives
// a pipe of a user over pipe-user-pages-soft (and PIPE_BUF), where the default is
// 16 pages. Content that fits is written before bwrap starts, by the caller, and the
// write end closed: no writer goroutine, and neither end registered with the
// runtime's poller (os.Pipe's three fcntl and an epoll_ctl per end, and an epoll_ctl
// more at each close).
const pipeMin = 4096

// filledPipe returns the read end of a new pipe that holds data, its write end
// closed: the reader sees data, then the end of the file.
func filledPipe(data []byte) (*os.File, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, os.NewSyscallError("pipe2", err)
	}
	defer unix.Close(p[1])
	for b := data; len(b) > 0; {
		n, err := unix.Write(p[1], b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			unix.Close(p[0])
			return nil, os.NewSyscallError("write", err)
		}
		b = b[n:]
	}
	return os.NewFile(uintptr(p[0]), "pipe"), nil
}

// openRegular opens path read-only when it is a regular file, else returns nil (the
// caller then falls back to a pipe: a missing file becomes an empty one, and a FIFO or
// device is read as before, never handed to bwrap). O_NONBLOCK keeps the open from
// hanging on a FIFO; it has no effect on reading a regular file.
func openRegular(path string) *os.File {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), path)
}

func fileData(f File) ([]byte, error) {
	switch f.Kind {
	case Content, Seccomp:
		return f.Content, nil
	case HostFile:
		// A system file that vanished since the plan was built is left empty.
		b, _ := os.ReadFile(f.Source)
		return b, nil
	case SecretFile:
		b, err := os.ReadFile(f.Source)
		if err != nil {
			return nil, fmt.Errorf("%w: reading the secret file for %s: %w", isolator.ErrProtection, f.Dest, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("%w: no source for %s", isolator.ErrProtection, f.Dest)
}
