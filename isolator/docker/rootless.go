package docker

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"syscall"

	"github.com/docker/docker/api/types"
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
// Only an engine whose socket is the user's can be rootless: a Unix socket on this
// host owned by the user (rootless Docker's $XDG_RUNTIME_DIR/docker.sock). Such an
// engine is asked (Info, while the host side is prepared) whether it is: Docker
// Desktop's socket is the user's too, and its engine, in a virtual machine, is not
// rootless (the command runs as the user's uid there, as on every rootful engine).
// A rootful engine's socket is root's: no request is added to its launches. Should
// an engine that said it is rootless run its containers in the host's user
// namespace after all, the init refuses to run the command as the host's root (125).

// ownEngine reports whether the engine at a is run by the user uid (not root): its
// Unix socket on this host is uid's. stat is os.Stat (tests fake it); the socket is
// the one the client dials (the pinned one, engineaddr.Address.DialPath).
func ownEngine(a Address, uid int, stat func(string) (fs.FileInfo, error)) bool {
	path := a.DialPath()
	if path == "" || !a.Local() || uid == 0 {
		return false
	}
	fi, err := stat(path)
	if err != nil || fi.Mode()&fs.ModeSocket == 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid
}

// isRootless reports whether info is a rootless engine's.
func isRootless(info system.Info) bool {
	return slices.ContainsFunc(info.SecurityOptions, func(o string) bool { return strings.Contains(o, "name=rootless") })
}

// ownAnswer is what an engine whose socket is the user's says of itself.
type ownAnswer struct {
	version types.Version
	info    system.Info
}

// podman names the Podman release behind a Docker-compatible API ("" for Docker):
// its version's Components name the Podman Engine.
func podman(v types.Version) string {
	for _, c := range v.Components {
		if strings.HasPrefix(c.Name, "Podman") {
			return cmp.Or(c.Version, v.Version, "?")
		}
	}
	return ""
}

// podmanFix is what to do on an engine that is Podman's Docker-compatible API.
const podmanFix = "run with --isolator krun (podman itself, with the krun runtime) or --isolator bwrap, or point DOCKER_HOST (docker.host) at a Docker engine"

// podmanRefused is the refusal of Podman's Docker-compatible API at host (connect's,
// for every command that reaches the engine); version is "" when the listener on its
// socket told (Address.PodmanService), not the API.
func podmanRefused(host, version string) isolator.Status {
	if version != "" {
		version = " " + version
	}
	return isolator.Status{State: isolator.Unavailable,
		Reason: fmt.Sprintf("the engine at %s is Podman%s's Docker-compatible API, which the docker isolator does not support (podman loads images, maps users and mounts differently: runs fail or would run the command as one of your subordinate ids)", host, version),
		Fix:    podmanFix}
}

// rootlessPlan is p as the engine runs it: with the command as the container's root
// on a rootless engine, whose limits it checks (ans is engineInfo's; nil: an engine
// whose socket is root's). Podman's Docker-compatible API is refused. The ssh agent
// is forwarded as on a rootful engine: what carries it in the container runs as
// another container uid than the command's (container.AgentCarrier).
func rootlessPlan(p *isolator.Plan, ans *future[ownAnswer], addr Address) (*isolator.Plan, error) {
	if ans == nil {
		return p, nil
	}
	in, err := ans.get()
	if err != nil {
		st := engineDown(addr, err)
		return nil, fmt.Errorf("%w: %s; %s", isolator.ErrUnavailable, st.Reason, st.Fix)
	}
	if v := podman(in.version); v != "" {
		return nil, errPodman(podmanRefused(addr.Host, v))
	}
	if !isRootless(in.info) {
		return p, nil
	}
	if err := rootlessLimits(p.Limits, in.info); err != nil {
		return nil, err
	}
	return asContainerRoot(p, true), nil
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
	return fmt.Errorf("%w: the rootless docker engine cannot apply %s (cgroup driver %q, cgroup v%s: it would start the sandbox without them); the command did not run. Run the engine on a cgroup v2 host with the controllers delegated to your user (Docker's rootless guide, \"Limiting resources\"), or run without the limit: remove limits.memory and limits.cpus from the config, and set limits.pids to 0 (--pids=0; it is 4096 unless set)",
		isolator.ErrProtection, strings.Join(missing, ", "), info.CgroupDriver, cmp.Or(info.CgroupVersion, "?"))
}

// engineInfo asks e for its version and Info when own (an engine whose socket is
// the user's), else nil; once the negotiating ping says answered, when not nil and
// e does not speak a recorded version (as aheadEngine.negotiated).
func engineInfo(ctx context.Context, e Engine, own bool, says *future[engineSays]) *future[ownAnswer] {
	if !own {
		return nil
	}
	return fetch(func() (ownAnswer, error) {
		if _, rec := e.(*recordedEngine); says != nil && !rec {
			_, _ = says.get()
		}
		version := fetch(func() (types.Version, error) { return e.ServerVersion(ctx) })
		info, err := e.Info(ctx)
		v, verr := version.get()
		return ownAnswer{version: v, info: info}, cmp.Or(verr, err)
	})
}
