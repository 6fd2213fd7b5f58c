package planner

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/tools"
)

// sandboxWritable lists the host paths a sandbox of cfg can write besides the
// project, as Build will bind them (isolator.Writable of its Plan is the same set,
// TestSandboxWritableCoversPlan checks): devsandbox's data and state (the sandbox
// home, the tools' own directories, the session /tmp, the private cache), /dev/shm's
// session directory, the socket directories, the host cache when bound, sandbox.rw_binds, the read-write
// sandbox.host_mounts, and the host paths the enabled tools share read-write. Each
// is given as configured and, when different, as resolved on th.
func sandboxWritable(cfg *config.Config, reg *tools.Registry, th tools.Host) []tools.WritablePath {
	h := cfg.Host
	var out []tools.WritablePath
	addAs := func(p, why string, userBind bool) {
		if !filepath.IsAbs(p) {
			return
		}
		p = filepath.Clean(p)
		out = append(out, tools.WritablePath{Path: p, Why: why, UserBind: userBind})
		if th.EvalSymlinks != nil {
			if r, err := th.EvalSymlinks(p); err == nil && filepath.IsAbs(r) && filepath.Clean(r) != p {
				out = append(out, tools.WritablePath{Path: filepath.Clean(r), Why: why, UserBind: userBind})
			}
		}
	}
	add := func(p, why string) { addAs(p, why, false) }
	// The user's binds mask the protected paths they hold (maskUserBinds).
	addUser := func(p, why string) { addAs(p, why, true) }
	add(filepath.Join(h.DataHome, "devsandbox"), "devsandbox's data: the sandbox homes")
	add(filepath.Join(h.StateHome, "devsandbox"), "devsandbox's state: the sessions' /tmp")
	// The socket directory (sockdir.Choose) holds the publish directory, where the
	// sandbox makes sockets.
	if h.RuntimeDir != "" {
		add(filepath.Join(h.RuntimeDir, "devsandbox"), "devsandbox's socket directories")
	}
	tmp := "/tmp"
	if t := h.Vars["TMPDIR"]; filepath.IsAbs(t) {
		tmp = filepath.Clean(t)
	}
	for _, d := range []string{tmp, realOr(th, tmp)} {
		out = append(out, tools.WritablePath{Path: fmt.Sprintf("%s/devsandbox-%d-", d, h.UID), Why: "devsandbox's socket directories", Prefix: true})
	}
	if cfg.Sandbox.Tmp == "shm" {
		add(fmt.Sprintf("/dev/shm/devsandbox-%d", h.UID), "sandbox.tmp = \"shm\"")
	}
	if cfg.Sandbox.BindHostCache {
		addUser(h.CacheHome, "sandbox.bind_host_cache")
	}
	for _, p := range cfg.Sandbox.RWBinds {
		addUser(p, "sandbox.rw_binds")
	}
	for _, m := range cfg.Sandbox.HostMounts {
		if !m.ReadOnly {
			addUser(m.Source, "sandbox.host_mounts")
		}
	}
	for _, t := range enabledTools(cfg, reg, th) {
		if t.Bindings == nil {
			continue
		}
		for _, b := range t.Bindings(th) {
			if b.Content == nil && (b.Mode == tools.RW || b.Create) {
				add(b.Source, "shared read-write with the sandbox by tool "+t.Name)
			}
		}
	}
	return out
}

// realOr is p resolved on th, or p.
func realOr(th tools.Host, p string) string {
	if th.EvalSymlinks != nil {
		if r, err := th.EvalSymlinks(p); err == nil && filepath.IsAbs(r) {
			return filepath.Clean(r)
		}
	}
	return p
}

// withWritable returns th with Writable set to cfg's sandboxWritable, worked out
// once and only when asked for (a tool's configuration file is about to be read).
func withWritable(cfg *config.Config, reg *tools.Registry, th tools.Host) tools.Host {
	inner := th
	th.Writable = sync.OnceValue(func() []tools.WritablePath { return sandboxWritable(cfg, reg, inner) })
	return th
}
