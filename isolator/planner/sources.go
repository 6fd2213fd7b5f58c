package planner

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/tools"
)

// protected is a host path no bind may expose: a hide path, a credential path, a
// Docker socket, a proxy credential's value file, devsandbox's own configuration and
// state. A bind whose source is one or lies in one is refused; one holding it gets a
// mask where it would show.
type protected struct {
	path, real string // as named, and resolved when it exists
	why        string // the rule, for people
	fix        string
}

// protectedPaths lists the protected paths of cfg on the host h.
func protectedPaths(cfg *config.Config, h config.Host, pr Probe) []protected {
	var out []protected
	add := func(p, why, fix string) {
		if !filepath.IsAbs(p) {
			return
		}
		p = filepath.Clean(p)
		r := p
		if rp, err := pr.EvalSymlinks(p); err == nil {
			r = rp
		}
		out = append(out, protected{path: p, real: r, why: why, fix: fix})
	}
	for _, p := range cfg.Sandbox.HidePaths {
		add(p, "sandbox.hide_paths", "remove it from sandbox.hide_paths in your user config to share it")
	}
	for _, p := range tools.CredentialPaths(h.Home) {
		add(p, "a credential path", "pass the credential as a secret (-e NAME, --secret-file) instead")
	}
	if !cfg.Sandbox.DockerSocket {
		for _, s := range dockerSockets(cfg) {
			add(s, "a Docker socket", "set sandbox.docker_socket = true to share it (root-equivalent)")
		}
		// podman's runtime directory holds its socket and the service devsandbox starts
		// for krun: the socket, its log and locks, which the next krun launch dials and
		// opens. A name the sandbox made there (a listener at the service's socket while
		// none runs) would be taken for podman's.
		add(filepath.Join(podmanRuntimeDir(h), "podman"), "podman's runtime directory (podman's socket and the service devsandbox starts for krun)", "set sandbox.docker_socket = true to share it (root-equivalent)")
	}
	for _, f := range credentialFiles(cfg) {
		add(f, "a proxy.credentials value_file", "the proxy adds that credential; the sandbox never reads it")
	}
	add(h.Vars["SSH_AUTH_SOCK"], "the host's ssh agent (SSH_AUTH_SOCK)", "the ssh tool gives the sandbox a filtering relay to it (tools.ssh)")
	for _, d := range []string{h.ConfigHome, h.DataHome, h.StateHome} {
		add(filepath.Join(d, "devsandbox"), "devsandbox's own configuration and state", "bind a directory that does not hold it")
	}
	return out
}

// bindUser adds a bind the user configured. Its source must exist; a symlink there (or
// above it) is followed here, once, and the resolved path is what is bound, so what
// is mounted is what was checked: it may not be or lie in a protected path. Protected
// paths it holds are masked at their place in the bind (see maskUserBinds).
func (b *mountBuilder) bindUser(src, dst string, ro bool, key string) error {
	return b.bindUserFrom(src, dst, ro, key, key)
}

// bindUserFrom is bindUser for an entry whose errors name it as from (a --mount flag, a
// host_mounts entry with its file and line) rather than by its key alone.
func (b *mountBuilder) bindUserFrom(src, dst string, ro bool, key, from string) error {
	drop := "remove the entry"
	if strings.HasPrefix(from, "--") {
		drop = "drop the flag"
	}
	if !b.pr.exists(src) {
		return fmt.Errorf("%w: %s: %s does not exist; create it or %s", ErrConfig, from, src, drop)
	}
	real, err := b.pr.EvalSymlinks(src)
	if err != nil {
		return fmt.Errorf("%w: %s: %s cannot be resolved (%w); fix the link or %s", ErrConfig, from, src, err, drop)
	}
	shown := src
	if real != filepath.Clean(src) {
		shown = src + " (a link to " + real + ")"
	}
	for _, p := range b.protected {
		for _, q := range []string{p.path, p.real} {
			if isolator.Within(real, q) {
				return fmt.Errorf("%w: %s: %s would expose %s, %s; %s", ErrConfig, from, shown, q, p.why, p.fix)
			}
		}
	}
	b.add(isolator.Mount{Kind: isolator.Bind, Source: real, Dest: dst, ReadOnly: ro, Why: key})
	b.userBinds = append(b.userBinds, len(b.mounts)-1)
	return nil
}

// podmanRuntimeDir is podman's runtime directory as the krun isolator finds it:
// $XDG_RUNTIME_DIR, else /run/user/UID (root: /run).
func podmanRuntimeDir(h config.Host) string {
	switch {
	case h.RuntimeDir != "":
		return h.RuntimeDir
	case h.UID != 0:
		return "/run/user/" + strconv.Itoa(h.UID)
	}
	return "/run"
}

// maskUserBinds masks every existing protected path that a user bind holds, at its
// place in the bind: a bind that moves a directory (host_mounts = ["/run:/mnt/run"])
// shows its content elsewhere than the masks at the host paths cover. A mask the
// other passes already put at the same place is not repeated. In a read-write bind
// the directories between the bind and the mask are anchored first (anchorInBind):
// the mask keeps a protected path from being read or written, its mount from being
// renamed, but not a directory above it from being renamed, which frees the old
// name on the host for a directory the sandbox makes (with rw_binds = ["~/.local"],
// ~/.local/state renamed and a ~/.local/state/devsandbox of the sandbox's own, which
// the next launch would take for devsandbox's state).
func (b *mountBuilder) maskUserBinds() {
	done := map[string]bool{}
	for _, m := range b.mounts {
		if (m.Kind == isolator.MaskFile || m.Kind == isolator.MaskDir) && m.HomeRel == "" {
			done[m.Dest] = true
		}
		if m.HomeRel != "" {
			done[filepath.Join(b.home, m.HomeRel)] = true
		}
	}
	for _, i := range b.userBinds {
		m := b.mounts[i]
		for _, p := range b.protected {
			fi, err := b.pr.Lstat(p.real)
			if err != nil || p.real == m.Source || !isolator.Within(p.real, m.Source) {
				continue
			}
			dst := filepath.Join(m.Dest, strings.TrimPrefix(p.real, m.Source+"/"))
			if done[dst] {
				continue
			}
			done[dst] = true
			b.anchorInBind(i, dst)
			mk := isolator.Mount{Kind: isolator.MaskFile, Dest: dst, Why: p.why + " in " + m.Why}
			if fi.Mode()&fs.ModeSymlink == 0 && fi.IsDir() {
				mk.Kind = isolator.MaskDir
			}
			b.add(mk)
		}
	}
}
