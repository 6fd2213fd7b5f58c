package krun

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/sockdir"
)

// StageAnchors is the stage-anchors role, run by nsenter in rootless podman's user
// and mount namespaces (those of its pause process, which every podman process of
// the user joins, the service and the runtime it starts included). It reads a JSON
// []Anchor line from in; opens each Path there, checks that it is the directory
// pinned (device and inode: a path a concurrent session swapped for a symlink is
// another directory, and stops the run), and binds that descriptor at Stage. It
// writes "ok" (or "error: ...") to out, holds the mounts until in ends, then detaches
// them. podman binds Stage, a path no sandbox can swap; runc copies the mount into
// the container when it starts. A mount source that is a descriptor of devsandbox's
// own cannot be used: the runtime mounts in a namespace of its own, where the kernel
// refuses a mount of another namespace.
func StageAnchors(in io.Reader, out io.Writer) int {
	r := bufio.NewReader(in)
	as, err := readAnchors(r)
	var staged []string
	for i := 0; err == nil && i < len(as); i++ {
		err = stageAnchor(as[i])
		if err == nil {
			staged = append(staged, as[i].Stage)
		}
	}
	defer func() {
		for _, s := range staged {
			_ = unix.Unmount(s, unix.MNT_DETACH)
		}
	}()
	if err != nil {
		fmt.Fprintf(out, "error: %v\n", err)
		return 1
	}
	fmt.Fprintln(out, "ok")
	_, _ = io.Copy(io.Discard, r)
	return 0
}

// stageAnchor binds the file a.Path leads to at a.Stage when it is the one pinned. A
// directory is bound at the empty directory made for it; a regular file at an empty
// file that replaces that directory (a bind's mount point is of its source's kind).
func stageAnchor(a Anchor) error {
	fd, err := unix.Open(a.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening %s in podman's namespace: %w", a.Path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("inspecting %s: %w", a.Path, err)
	}
	if err := samePinned(a, uint64(st.Dev), st.Ino); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG {
		if err := unix.Rmdir(a.Stage); err != nil {
			return fmt.Errorf("making the mount point of %s: %w", a.Path, err)
		}
		mp, err := unix.Open(a.Stage, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return fmt.Errorf("making the mount point of %s: %w", a.Path, err)
		}
		unix.Close(mp)
	}
	if err := unix.Mount("/proc/self/fd/"+strconv.Itoa(fd), a.Stage, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("binding %s at %s: %w", a.Path, a.Stage, err)
	}
	return nil
}

// StageAnchors binds each anchor at a directory of its own below runtimeDir inside
// podman's namespaces (the role above, by nsenter) and returns, by path, the
// directory podman is to bind instead; stop ends the role (the mounts go) and
// removes the directories. Without anchors it does nothing.
func (osHost) StageAnchors(runtimeDir, nsenter string, as []Anchor) (map[string]string, func(), error) {
	staged := map[string]string{}
	if len(as) == 0 {
		return staged, func() {}, nil
	}
	fail := func(err error) (map[string]string, func(), error) {
		return nil, nil, fmt.Errorf("%w: %s lies where a sandbox can write (or holds a masked path) and must be bound as the file devsandbox checked, which podman can do only from inside its own namespaces: %w; the command did not run", isolator.ErrProtection, as[0].Path, err)
	}
	b, err := os.ReadFile(filepath.Join(runtimeDir, "libpod/tmp/pause.pid"))
	if err != nil {
		return fail(fmt.Errorf("finding rootless podman's pause process: %w", err))
	}
	pid := strings.TrimSpace(string(b))
	var ns []*os.File
	defer func() {
		for _, f := range ns {
			f.Close()
		}
	}()
	for _, n := range []string{"user", "mnt"} {
		f, err := os.Open("/proc/" + pid + "/ns/" + n)
		if err != nil {
			return fail(fmt.Errorf("opening podman's %s namespace: %w", n, err))
		}
		ns = append(ns, f)
	}
	// Held until it is removed: `sandboxes prune` removes only one nobody holds
	// (sockdir.PruneAnchors), such as a killed session's.
	dir, release, err := sockdir.MakeAnchors(runtimeDir)
	if err != nil {
		return fail(err)
	}
	unmake := func() {
		os.RemoveAll(dir)
		release()
	}
	staged = stagePaths(dir, as)
	for i := range as {
		if err := os.Mkdir(as[i].Stage, 0o700); err != nil {
			unmake()
			return fail(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		unmake()
		return fail(err)
	}
	line, _ := json.Marshal(as)
	cmd := exec.Command(nsenter, "--user=/proc/self/fd/3", "--mount=/proc/self/fd/4", "--preserve-credentials", "--", self, AnchorArg)
	// A fixed environment: devsandbox-krun's own holds the run's secret values.
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	cmd.Dir = "/"
	cmd.ExtraFiles = ns
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = time.Second
	// A process group of its own: it lives as long as the run, and the terminal's
	// job-control signals to devsandbox's group (Ctrl-Z, the SIGTTIN of a read from
	// the background) would stop it for good, with nothing to continue it; it ends
	// when its stdin does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err == nil {
		var stdout io.ReadCloser
		if stdout, err = cmd.StdoutPipe(); err == nil {
			if err = cmd.Start(); err == nil {
				_, _ = stdin.Write(append(line, '\n'))
				var answer string
				answer, err = bufio.NewReader(stdout).ReadString('\n')
				if answer = strings.TrimSpace(answer); err == nil && answer != "ok" {
					err = errors.New(strings.TrimPrefix(answer, "error: "))
				}
				if err != nil {
					stdin.Close()
					_ = cmd.Wait()
				}
			}
		}
	}
	if err != nil {
		unmake()
		return fail(err)
	}
	stop := func() {
		stdin.Close()
		_ = cmd.Wait()
		// A mount point in another namespace does not keep a directory from going.
		unmake()
	}
	return staged, stop, nil
}
