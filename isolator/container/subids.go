package container

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/internal/procgroup"
	"github.com/devsandbox/devsandbox/isolator"
)

// A rootless podman (the krun isolator) runs a container in a user namespace where
// your uid is mapped and the rest are your subordinate uids: what the runtime makes
// in a bound directory as the container's root (a mount point in the sandbox home) is
// your first subordinate uid's on the host, and you cannot remove a directory of its
// that is not empty. In the user namespace podman uses (`podman unshare`), you are
// root over your own and your subordinate uids' files, and can.

// SubIDOwned returns the first entry below dir, in walk order, whose owner is neither
// uid nor root ("" when there is none). It follows no symlink.
func SubIDOwned(dir string, uid int) (string, error) {
	var found string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil // what cannot be read is not ours to list
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != uid {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	return found, err
}

// UnshareRemoveArgs is podman's argv that removes dir in podman's user namespace:
// rm removes a symlink, never what it names, and does not cross into another file
// system mounted below dir. Pure.
func UnshareRemoveArgs(dir string) []string {
	return []string{"unshare", "rm", "-rf", "--one-file-system", "--", dir}
}

// Podman runs the podman CLI with args and returns its combined output (tests fake it).
type Podman func(ctx context.Context, args ...string) ([]byte, error)

// HostPodman is Podman on the host's podman, with the caller's environment (which
// names the user's runtime directory and storage) and / as the working directory.
// A podman on PATH where a sandbox of the user's writes (isolator.SandboxWritten: a
// devsandbox project's .venv/bin) is refused, and podman looks its own helpers
// (newuidmap) up on a PATH devsandbox chose (isolator.ChosenPathEnv).
func HostPodman(ctx context.Context, args ...string) ([]byte, error) {
	podman, err := exec.LookPath("podman")
	if err != nil {
		return nil, fmt.Errorf("podman is not installed: %w", err)
	}
	data, state := isolator.HostRoots()
	if err := isolator.SandboxWritten(data, state, "podman", podman); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, podman, args...)
	cmd.Env = isolator.ChosenPathEnv(os.Environ(), podman)
	cmd.Dir = "/"
	// Rootless podman re-executes itself in its user namespace, and podman unshare
	// runs the command as its child: the end of ctx kills them with podman.
	procgroup.Own(cmd, time.Second)
	return cmd.CombinedOutput()
}

// RemoveAsPodman removes dir (an absolute path) in podman's user namespace
// (UnshareRemoveArgs), through podman.
func RemoveAsPodman(ctx context.Context, podman Podman, dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%s is not an absolute path", dir)
	}
	out, err := podman(ctx, UnshareRemoveArgs(filepath.Clean(dir))...)
	if err != nil {
		if msg := strings.TrimSpace(string(out)); msg != "" {
			return fmt.Errorf("podman %s: %w: %s", strings.Join(UnshareRemoveArgs(dir), " "), err, msg)
		}
		return fmt.Errorf("podman %s: %w", strings.Join(UnshareRemoveArgs(dir), " "), err)
	}
	return nil
}
