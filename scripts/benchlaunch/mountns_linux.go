package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// reexecInMountNS runs benchlaunch again in a new mount namespace and returns its exit
// error. The host's mount table is never touched: the mounts happen in the child.
func reexecInMountNS(args []string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	argv := mountNSArgs(self, args)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	return cmd.Run()
}

// setupMounts, in the re-executed benchlaunch, makes sure this is a mount namespace
// of its own with no propagation to the host, and mounts n small tmpfs under a temp
// directory, each made shared (a peer group of its own) when shared is set. It returns
// the number of lines of /proc/self/mountinfo after, and a cleanup that unmounts them
// and removes the directory (which the host sees, empty).
func setupMounts(n int, shared bool) (int, func(), error) {
	lines, dir, err := mountTmpfs(n, shared)
	cleanup := func() {
		if dir == "" {
			return
		}
		for i := 0; i < n; i++ {
			unix.Unmount(filepath.Join(dir, strconv.Itoa(i)), unix.MNT_DETACH)
		}
		os.RemoveAll(dir)
	}
	if err != nil {
		cleanup()
		return 0, nil, err
	}
	return lines, cleanup, nil
}

func mountTmpfs(n int, shared bool) (lines int, dir string, err error) {
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return 0, dir, err
	}
	host, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", os.Getppid()))
	if err != nil {
		return 0, dir, err
	}
	if self == host {
		return 0, dir, errors.New("in the same mount namespace as the benchlaunch that started it; refusing to mount")
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return 0, dir, fmt.Errorf("make / private: %w", err)
	}
	if err := checkPropagation(nil); err != nil {
		return 0, dir, fmt.Errorf("after making / private: %w", err)
	}
	ours := map[string]bool{}
	if n > 0 {
		if dir, err = os.MkdirTemp("", "benchlaunch-mounts-"); err != nil {
			return 0, "", err
		}
		for i := 0; i < n; i++ {
			d := filepath.Join(dir, strconv.Itoa(i))
			if err := os.Mkdir(d, 0o755); err != nil {
				return 0, dir, err
			}
			if err := unix.Mount("tmpfs", d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=64k"); err != nil {
				return 0, dir, fmt.Errorf("mount tmpfs %d: %w", i, err)
			}
			// A new peer group holding this one mount. It cannot reach the host: the
			// host has no mount in it, and the mount's parent is private, so neither
			// this mount nor anything mounted on it later propagates outwards.
			if shared {
				if err := unix.Mount("", d, "", unix.MS_SHARED, ""); err != nil {
					return 0, dir, fmt.Errorf("make tmpfs %d shared: %w", i, err)
				}
				ours[d] = true
			}
		}
	}
	if err := checkPropagation(ours); err != nil {
		return 0, dir, fmt.Errorf("after mounting: %w", err)
	}
	lines, err = countLines("/proc/self/mountinfo")
	return lines, dir, err
}

// checkPropagation fails when a mount of this namespace other than the shared ones in
// ours propagates to or from a peer group.
func checkPropagation(ours map[string]bool) error {
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	if s := strayPropagation(string(info), ours); len(s) > 0 {
		return fmt.Errorf("mounts propagate (%s); refusing to mount", strings.Join(s, ", "))
	}
	return nil
}
