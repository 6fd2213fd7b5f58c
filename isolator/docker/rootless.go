package docker

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/docker/docker/api/types/system"

	"github.com/devsandbox/devsandbox/isolator"
)

// A rootless Docker engine (dockerd run by the user through rootlesskit) runs its
// containers in a user namespace where uid 0 is the user and every other uid one of
// the user's subordinate ids. Run as the user's own uid there, the command would be a
// subordinate id on the host: the project's and the sandbox home's files (the user's,
// the container's root's) would not be its to write, and what it made would not be
// the user's to change or remove. So on such an engine the command runs as the
// container's uid 0, with every capability dropped (an empty bounding set, which the
// init checks: a root that execs gains its bounding set) and no_new_privs: the user,
// as on the host, with /etc/passwd naming the user.
//
// The engine is recognised by its socket, without a request on the launch's path:
// a Unix socket on this host owned by the user (rootless Docker's
// $XDG_RUNTIME_DIR/docker.sock). A rootful engine's socket is root's. Should an
// engine whose socket the user owns run its containers in the host's user namespace
// after all, the init refuses to run the command as the host's root (125).

// ownEngine reports whether the engine at a is run by the user uid (not root): its
// Unix socket on this host is uid's. stat is os.Stat (tests fake it); the socket is
// reached through links, as the client reaches it.
func ownEngine(a Address, uid int, stat func(string) (fs.FileInfo, error)) bool {
	path, ok := strings.CutPrefix(a.Host, "unix://")
	if !ok || !a.Local() || uid == 0 {
		return false
	}
	fi, err := stat(path)
	if err != nil || fi.Mode()&fs.ModeSocket == 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid
}

// asContainerRoot is p with the command run as the container's root (a rootless
// engine's, the user), or p itself when own is false.
func asContainerRoot(p *isolator.Plan, own bool) *isolator.Plan {
	if !own || p.User.ContainerRoot {
		return p
	}
	q := *p
	q.User.ContainerRoot = true
	return &q
}

// rootlessLimits refuses limits a rootless engine would drop without a word: one
// without cgroups (cgroup v1, or v2 without delegation) creates the container with
// none of them and no warning, where a rootful engine warns (limitsDiscarded).
func rootlessLimits(l isolator.Limits, info system.Info) error {
	var missing []string
	if l.Pids > 0 && !info.PidsLimit {
		missing = append(missing, fmt.Sprintf("limits.pids = %d", l.Pids))
	}
	if l.Memory > 0 && !info.MemoryLimit {
		missing = append(missing, fmt.Sprintf("limits.memory = %d bytes", l.Memory))
	}
	if l.CPUs > 0 && !info.CPUCfsQuota {
		missing = append(missing, fmt.Sprintf("limits.cpus = %g", l.CPUs))
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w: the rootless docker engine cannot apply %s (cgroup driver %q, cgroup v%s: it would start the sandbox without them); the command did not run. Run the engine on a cgroup v2 host with the controllers delegated to your user (Docker's rootless guide, \"Limiting resources\"), or set the limit to 0 (--pids=0) or leave it unset",
		isolator.ErrProtection, strings.Join(missing, ", "), info.CgroupDriver, cmp.Or(info.CgroupVersion, "?"))
}

// engineInfo asks e for its Info when own (a rootless engine's limits), else nil.
func engineInfo(ctx context.Context, e Engine, own bool) *future[system.Info] {
	if !own {
		return nil
	}
	return fetch(func() (system.Info, error) { return e.Info(ctx) })
}
