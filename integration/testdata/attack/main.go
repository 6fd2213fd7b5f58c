// Command attack is what the integration tests run inside a sandbox to attack it:
// moves the shell tools do not have. It is built by the tests (static, for every
// image) and placed in the project.
//
//	attack exchange A B STOP   swap A and B (renameat2 RENAME_EXCHANGE) every 10 ms
//	                           until the file STOP exists; prints "swapping" first
//	attack linger OUT MARKER   outlive the session: the leader thread exits while
//	                           another thread keeps reading every /proc/*/environ and
//	                           /run/secrets/* for MARKER, appending what it finds to OUT
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

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
