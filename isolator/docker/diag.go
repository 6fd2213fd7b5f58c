package docker

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/docker/docker/api/types/system"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/docker/engineaddr"
)

// Diagnose implements isolator.Diagnoser: the engine answers, its API version, the
// default image is present, rootless or not.
func (b *Isolator) Diagnose(ctx context.Context) []isolator.Check {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var rows []isolator.Check
	ok := func(name, detail string) {
		rows = append(rows, isolator.Check{Name: name, Status: isolator.Status{State: isolator.Active}, Detail: detail})
	}
	bad := func(name, reason, fix string) {
		rows = append(rows, isolator.Check{Name: name, Status: isolator.Status{State: isolator.Unavailable, Reason: reason, Fix: fix}})
	}
	if b.dial == nil {
		// A refused address (an ssh:// DOCKER_HOST or context) in Check's words.
		if _, err := b.address(); err != nil {
			bad("docker engine", err.Error(), addressFix)
			return rows
		}
	}
	e, a, err := b.engine(ctx)
	if r, ok := refused(err); ok {
		st := r.st
		if a.PodmanService() {
			st.Reason += "; " + a.LocalWhy()
		}
		bad("docker engine", st.Reason, st.Fix)
		return rows
	}
	if err != nil {
		bad("docker engine", err.Error(), dialFix(err))
		return rows
	}
	defer e.Close()
	v, err := e.ServerVersion(ctx)
	if err != nil {
		st := engineDown(a, err)
		bad("docker engine", st.Reason, st.Fix)
		return rows
	}
	if pv := podman(v); pv != "" {
		st := podmanRefused(a.Host, pv)
		if a.PodmanService() {
			st.Reason += "; " + a.LocalWhy()
		}
		bad("docker engine", st.Reason, st.Fix)
		return rows
	}
	ok("docker engine", fmt.Sprintf("%s (%s), Docker %s %s/%s; reached over %s", a.Host, a.Origin, v.Version, v.Os, v.Arch, a.Describe()))
	rows = append(rows, filesRow(a.Local(), a.LocalWhy(), v.APIVersion))
	if ch := a.Channel(); ch == engineaddr.Clear || ch == engineaddr.ClearLoopback {
		reason := "plain TCP: what devsandbox sends the engine (the project's files, the sandbox's input and output) crosses unencrypted, and whoever reaches " + a.Host + " controls the engine"
		if ch == engineaddr.Clear {
			reason += "; a run that would send a secret, a variable taken for a credential (env.passthrough or env.set: by its name or its value's form), a proxy credential or the ssh agent is refused, and so is one that would send, as the content of a project file (.git/config and the files it includes, .envrc and the other files host tools run), a setting taken for a credential"
		}
		rows = append(rows, isolator.Check{Name: "docker engine channel", Status: isolator.Status{State: isolator.Warning, Reason: reason, Fix: engineaddr.ClearFix}})
	}
	if apiBefore(v.APIVersion, MinAPI) {
		bad("docker API version", fmt.Sprintf("the engine speaks API %s, older than %s", v.APIVersion, MinAPI), "upgrade Docker to 20.10 or newer")
	} else {
		ok("docker API version", fmt.Sprintf("engine %s (minimum %s); devsandbox uses no feature newer than %s", v.APIVersion, v.MinAPIVersion, MinAPI))
	}
	if _, err := e.ImageInspect(ctx, b.Image); err != nil {
		bad("docker image", fmt.Sprintf("%s is not on the engine", b.Image), imageFix)
	} else {
		ok("docker image", b.Image)
	}
	if info, err := e.Info(ctx); err == nil {
		rows = append(rows, rootlessRows(info, ownEngine(a, os.Getuid(), os.Stat), a.Host, os.Getuid())...)
	}
	return rows
}

// filesRow is doctor's row on whose files the engine binds (local: Address.Local),
// why (the listener on its socket: why, Address.LocalWhy), and what a run does
// with that: bind this machine's files, or take the remote path, where an engine
// older than API SubpathAPI refuses writable anchors (RefuseAnchors). Pure.
func filesRow(local bool, why, api string) isolator.Check {
	const name = "docker engine files"
	if local {
		return isolator.Check{Name: name, Status: isolator.Status{State: isolator.Active},
			Detail: "this machine's: " + why + "; a run binds the project and the sandbox home from this host"}
	}
	detail := "another machine's, for all devsandbox can tell: " + why + "; a run takes the remote path: the sandbox home is the engine's volume devsandbox-<name>-home, not the home directory a local engine binds from this host"
	if engineaddr.APIBefore(api, engineaddr.SubpathAPI) {
		return isolator.Check{Name: name, Status: isolator.Status{State: isolator.Warning,
			Reason: detail + "; and this engine speaks API " + api + ", older than " + engineaddr.SubpathAPI + ", so a run whose mounts hold a writable anchor (a repository's .git, a writable bind where a sandbox can write) is refused",
			Fix:    "upgrade the engine to Docker 26 or newer (Docker Desktop 4.29 or newer), reach an engine on this host through dockerd's own socket (unix:///var/run/docker.sock), or use --isolator=bwrap"}}
	}
	return isolator.Check{Name: name, Status: isolator.Status{State: isolator.Active}, Detail: detail + "; API " + api + " mounts writable anchors as volume sub-paths"}
}

// rootlessRows are doctor's rows on whether the engine is rootless (info) and how
// devsandbox runs the command there; own is ownEngine's verdict on its socket. Pure.
func rootlessRows(info system.Info, own bool, host string, uid int) []isolator.Check {
	rootless := isRootless(info)
	row := func(name string, st isolator.State, detail, reason, fix string) isolator.Check {
		return isolator.Check{Name: name, Status: isolator.Status{State: st, Reason: reason, Fix: fix}, Detail: detail}
	}
	switch {
	case rootless && own:
		rows := []isolator.Check{row("docker rootless", isolator.Active, fmt.Sprintf("rootless engine, run by you: the sandboxed command runs as the container's root, which is you (uid %d) on this host, with no capability and no_new_privs; what it writes in the project is yours", uid), "", "")}
		if !info.PidsLimit || !info.MemoryLimit || !info.CPUCfsQuota {
			rows = append(rows, row("docker rootless limits", isolator.Warning, "",
				fmt.Sprintf("the engine has no cgroup controllers for you (cgroup driver %q, cgroup v%s; pids %v, memory %v, cpu %v): it would drop limits without a word, so a run with limits.pids (4096 by default), limits.memory or limits.cpus that it cannot apply is refused", info.CgroupDriver, info.CgroupVersion, info.PidsLimit, info.MemoryLimit, info.CPUCfsQuota),
				"run the engine on a cgroup v2 host with the controllers delegated to your user (Docker's rootless guide, \"Limiting resources\"), or set limits.pids = 0 (and no memory or cpus limit) for this engine"))
		}
		return rows
	case rootless:
		return []isolator.Check{row("docker rootless", isolator.Unavailable, "",
			fmt.Sprintf("a rootless engine whose socket (%s) is not a socket of yours on this host: devsandbox recognises a rootless engine by its socket, and would run the command as your uid, which such an engine maps to one of its subordinate ids: the project's files would not be its to write (runs fail) and what it made not yours", host),
			"reach the engine through its own socket, owned by you ($XDG_RUNTIME_DIR/docker.sock: DOCKER_HOST=unix://$XDG_RUNTIME_DIR/docker.sock or `docker context use rootless`)")}
	case own:
		return []isolator.Check{row("docker rootless", isolator.Active, "no: a rootful engine whose socket is yours (Docker Desktop's, or one in a virtual machine): the sandboxed command runs as your uid", "", "")}
	}
	return []isolator.Check{row("docker rootless", isolator.Active, "no: a rootful engine (access to it is root-equivalent)", "", "")}
}
