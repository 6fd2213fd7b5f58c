// Package planner builds an isolator.Plan (the type, in package isolator) from the
// effective configuration, the tool registry and a probe of the host: Load reads the
// configuration, Build makes the Plan. The Plan is complete: the backends and the
// host services a run starts (isolator/hostsvc) read everything from it. Build reads
// the host only through its Probe; its effects, none under Request.DryRun, are the
// mask scan's cache (see isolator/maskscan) and, on first use of proxy.mitm, the
// project's proxy CA in the state directory. It is table-tested against temporary
// directories.
package planner

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/internal/enginehost"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/etcsnap"
	"github.com/devsandbox/devsandbox/proxy/audit"
	"github.com/devsandbox/devsandbox/syscalls"
	"github.com/devsandbox/devsandbox/tools"
)

// ErrConfig is wrapped by errors caused by configured values that do not fit the host
// (a bind source that does not exist, a secret file that cannot be read).
var ErrConfig = isolator.ErrConfig

// Request is what the command line asks for beyond the configuration.
type Request struct {
	Command []string // empty: the user's shell
	TTY     bool
	// DryRun builds the Plan to be printed, not run: Build writes nothing (no mask
	// scan cache, no proxy CA).
	DryRun bool
	// Session names the run (NewSession when empty).
	Session string
	// System, when set, is the default system view worked out ahead (StartSystem),
	// used when the configuration asks for it; when nil, the one LoadDir started
	// (in its Probe), if any.
	System *SystemHead
	// Placeholders are credentials' placeholders made for this launch before the
	// plan, by variable (PlaceholderPrefix + index): bwrap's early start gives bwrap
	// its environment before the plan exists, and is used only when the plan's
	// values are those (the launch record keeps the variable's name, never a value).
	// Each must be a NewPlaceholder of this launch alone; a variable not here gets a
	// new one.
	Placeholders map[string]string
}

// envAllowlist are the host variables that always pass (DESIGN guarantee 4).
var envAllowlist = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_*", "TERM", "COLORTERM", "TZ"}

// dockerSockets are masked wherever they are visible, unless sandbox.docker_socket:
// the usual places of Docker's, podman's and containerd's sockets, those of Docker
// Desktop, colima, Rancher Desktop and OrbStack, LXD's and Incus's, and the engines
// devsandbox is configured with wherever they lie: DOCKER_HOST's, docker.host's, the
// current docker CLI context's (DOCKER_CONTEXT or the docker config directory's
// config.json) and krun.podman_socket. Every sandbox has a /run of its own, but a bind can show the
// host's elsewhere, and a read-only mount does not stop connect(2) on a socket.
func dockerSockets(cfg *config.Config) []string {
	h := cfg.Host
	s := []string{"/run/docker.sock", "/var/run/docker.sock", "/run/podman/podman.sock",
		"/run/containerd/containerd.sock", "/run/user/" + strconv.Itoa(h.UID) + "/docker.sock",
		"/run/user/" + strconv.Itoa(h.UID) + "/podman/podman.sock",
		h.Home + "/.docker/run/docker.sock", h.Home + "/.docker/desktop/docker.sock",
		h.Home + "/.colima/default/docker.sock", h.Home + "/.colima/docker.sock",
		h.Home + "/.rd/docker.sock", h.Home + "/.orbstack/run/docker.sock"}
	if h.RuntimeDir != "" {
		s = append(s, h.RuntimeDir+"/docker.sock", h.RuntimeDir+"/podman/podman.sock")
	}
	unixSocket := func(addr string) {
		if u, ok := strings.CutPrefix(addr, "unix://"); ok && filepath.IsAbs(u) {
			s = append(s, filepath.Clean(u))
		} else if filepath.IsAbs(addr) {
			s = append(s, filepath.Clean(addr))
		}
	}
	unixSocket(h.Vars["DOCKER_HOST"])
	unixSocket(cfg.Docker.Host)
	unixSocket(cfg.Krun.PodmanSocket)
	// The context's files are read only where a view shows more of the host than the
	// minimal one (a system bind or a bind of yours): the default launch reads nothing
	// more. An unreadable context is not an engine devsandbox uses either.
	if hostShown(cfg) {
		// Engines whose sockets lie outside /run, where a system bind shows them:
		// LXD's and Incus's (their groups are root-equivalent, and Ubuntu puts its
		// first user in lxd).
		s = append(s, "/var/snap/lxd/common/lxd/unix.socket", "/var/lib/lxd/unix.socket",
			"/var/lib/incus/unix.socket")
		if name, dir := enginehost.Context(h.Vars, h.Home); name != "" {
			if host, err := enginehost.ContextHost(dir, name); err == nil {
				unixSocket(host)
			}
		}
	}
	return s
}

// hostShown reports whether cfg shows host paths beyond the minimal system view, the
// project and the sandbox home: system_binds, ro_binds, rw_binds, host_mounts, --mount.
func hostShown(cfg *config.Config) bool {
	sb := cfg.Sandbox
	return len(sb.SystemBinds) > 0 || len(sb.ROBinds) > 0 || len(sb.RWBinds) > 0 || len(sb.HostMounts) > 0
}

// InitBinary is the small in-sandbox init installed next to devsandbox. Without it,
// devsandbox itself is the init (slower to start: it is a much larger binary).
const InitBinary = "devsandbox-init"

// BwrapInitBinary is the bwrap isolator's init installed next to devsandbox: the
// bwrap roles of InitBinary only (Plan.BwrapInit).
const BwrapInitBinary = "devsandbox-bwrap-init"

// EnvMarker is set inside every sandbox; its presence means devsandbox is nested.
const EnvMarker = "DEVSANDBOX"

// Build returns the Plan for running req under cfg, and warnings for people. cfg is
// the configuration as Load and LoadDir return it: with the tool keys the proxy is to
// hold turned into proxy credentials (ToolKeys). A key set to be held that is not is
// refused (UnheldKeys), never passed into the sandbox.
func Build(cfg *config.Config, reg *tools.Registry, pr Probe, req Request) (*isolator.Plan, []string, error) {
	if err := UnheldKeys(cfg, reg); err != nil {
		return nil, nil, err
	}
	h := cfg.Host
	var warns []string
	head := req.System
	if head == nil {
		head = pr.head
	}
	snapshots := etcsnap.Root(h.StateHome)
	ahead := head.take(cfg.Sandbox.SystemBinds, snapshots)
	var stats *statCache
	if pr.osLinks {
		stats = newStatCache(pr.Lstat, pr.Stat)
		if ahead && head.stats != nil && hostStats(pr) {
			stats = head.stats // the view's questions were asked through it: shared, not asked again
		}
		pr = withStats(pr, stats, h)
	}
	pr = withPasswdOnce(pr)
	proj, err := FindProject(pr, h)
	if err != nil {
		return nil, nil, err
	}
	if stats != nil {
		stats.listDirs(listNames, proj.Dir) // the agent files a project may hold
	}
	workdir, err := pr.EvalSymlinks(pr.Cwd)
	if err != nil {
		return nil, nil, fmt.Errorf("resolving the working directory: %w", err)
	}
	self, err := pr.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("finding the devsandbox binary: %w", err)
	}
	selfDir := filepath.Dir(self)
	bwrapInit := filepath.Join(filepath.Dir(self), BwrapInitBinary)
	if !pr.exists(bwrapInit) {
		bwrapInit = ""
	}
	if initBin := filepath.Join(filepath.Dir(self), InitBinary); pr.exists(initBin) {
		self = initBin
	}
	if err := pr.sameBuild(bwrapInit, self); err != nil {
		return nil, nil, err
	}
	mode, err := egress.ParseMode(cfg.Egress.Mode)
	if err != nil {
		return nil, nil, err
	}
	policy, err := syscalls.New(cfg.Sandbox.RelaxSyscalls)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: sandbox.relax_syscalls: %w", ErrConfig, err)
	}
	if len(policy.Relax) > 0 {
		warns = append(warns, fmt.Sprintf("the syscall policy is relaxed for this sandbox (sandbox.relax_syscalls from %s): %s", cfg.Origins["sandbox.relax_syscalls"], policy))
	}
	allow, err := egress.ParseEntries(cfg.Egress.Allow)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: egress.allow: %w", ErrConfig, err)
	}
	deny, err := egress.ParseEntries(cfg.Egress.Deny)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: egress.deny: %w", ErrConfig, err)
	}
	for _, own := range []string{h.ConfigHome, h.DataHome, h.StateHome} {
		switch d := filepath.Join(own, "devsandbox"); {
		case isolator.Within(d, proj.Dir):
			return nil, nil, fmt.Errorf("%w: %s contains %s, devsandbox's own configuration or state, which the sandbox could rewrite; run devsandbox from a project that does not contain it", ErrProject, proj.Dir, d)
		case isolator.Within(proj.Dir, d):
			// There the sandbox could replace other projects' lock files and run
			// marks (packages projlock, runmark), which prune trusts.
			return nil, nil, fmt.Errorf("%w: %s lies in %s, devsandbox's own configuration or state, which the sandbox could rewrite; run devsandbox from a project outside it", ErrProject, proj.Dir, d)
		}
	}
	base := filepath.Join(h.DataHome, "devsandbox", proj.Name)
	state := filepath.Join(h.StateHome, "devsandbox", proj.Name)
	p := &isolator.Plan{
		Project:           proj,
		Workdir:           workdir,
		User:              hostUser(h),
		SandboxHome:       filepath.Join(base, "home"),
		StateDir:          state,
		EmptyFile:         filepath.Join(h.StateHome, "devsandbox", "empty"),
		Self:              self,
		BwrapInit:         bwrapInit,
		Tmp:               isolator.Tmp{Kind: cfg.Sandbox.Tmp, Dir: filepath.Join(state, "tmp"), Size: cfg.Sandbox.TmpSizeBytes()},
		Egress:            egress.Rules{Mode: mode, Allow: allow, Deny: deny},
		Syscalls:          policy,
		Limits:            isolator.Limits{Pids: cfg.Limits.Pids, Memory: cfg.Limits.MemoryBytes(), CPUs: cfg.Limits.CPUs, DiskReserve: uint64(cfg.Sandbox.DiskReserveBytes())},
		Command:           req.Command,
		TTY:               req.TTY,
		ReadOnly:          cfg.Sandbox.ReadOnly,
		TerminalClipboard: cfg.Sandbox.TerminalClipboard,
		HostEnv:           h.Vars,
	}
	if p.Tmp.Kind == "shm" {
		p.Tmp.Dir = fmt.Sprintf("/dev/shm/devsandbox-%d", h.UID)
	}
	if len(p.Command) == 0 {
		sh := p.User.Shell
		if sh == "" {
			sh = "/bin/sh"
		}
		p.Command = []string{sh}
	}
	from := func(key, value string) string { return entryFrom(cfg, key, value) }
	b := &mountBuilder{pr: pr, home: h.Home, base: base, from: from}
	if ahead {
		b.sysAhead = head.viewNow // waited for where the view is first needed (visible)
	} else if b.sys, err = systemView(pr, cfg.Sandbox.SystemBinds, snapshots, from); err != nil {
		return nil, nil, err
	}
	b.protected = protectedPaths(cfg, h, pr)
	other := otherHome(pr, cfg, h)
	b.protectOtherHome(cfg.Sandbox.HidePaths, h.Home, other)
	miserc, miseWarns := readMiserc(pr.readPresent, misercPaths(h.Vars, proj.Dir, h.Home, h.ConfigHome))
	warns = append(warns, miseWarns...)
	b.hostFiles, miseWarns = hostExecutedNames(h.Vars, proj.Dir, miserc)
	warns = append(warns, miseWarns...)
	yarnEnv := yarnEnvNames(h.Vars, proj.Dir)
	for _, n := range yarnEnv.names() {
		if !slices.Contains(b.hostFiles, n) {
			b.hostFiles = append(b.hostFiles, n)
		}
	}
	b.yarnRC = yarnEnv.rc
	b.yarnRun = slices.Concat(yarnEnv.run, yarnEnv.top)
	warns = append(warns, yarnEnv.warns...)
	if p.Egress.NeedsProxy() {
		b.sshProxyCommand = isolator.InitPath + " --connect=" + egress.SandboxProxyAddr + " %h %p"
	}
	// Before the sandbox home, the project and the binds: what they show in it stays.
	if err := b.maskOtherHome(other, proj.Dir); err != nil {
		return nil, nil, err
	}
	if err := b.maskXDGDirs(h, other, proj.Dir); err != nil {
		return nil, nil, err
	}
	b.add(isolator.Mount{Kind: isolator.Bind, Source: p.SandboxHome, Dest: h.Home, Why: "sandbox home"})
	p.PrivateDirs = []string{p.SandboxHome}
	switch {
	case cfg.Sandbox.BindHostCache:
		// A user bind: refused when it lies in a protected path, and every protected
		// path it holds (devsandbox's own state under an XDG_STATE_HOME placed in the
		// cache, a hidden directory) masked in it.
		if err := b.bindUser(h.CacheHome, h.CacheHome, false, "sandbox.bind_host_cache"); err != nil {
			return nil, nil, err
		}
	case !isolator.Within(h.CacheHome, h.Home):
		// Below the home, the cache is already private: it lives in the sandbox home.
		cache := filepath.Join(base, "cache")
		p.PrivateDirs = append(p.PrivateDirs, cache)
		b.add(isolator.Mount{Kind: isolator.Bind, Source: cache, Dest: h.CacheHome, Why: "private cache"})
	}
	// Order matters: a later mount covers an earlier one. The project comes after the
	// home it usually lies in, user binds after the project they may reach into, and
	// every protection (hides, git hooks and config, masks) after all of them.
	if err := b.project(proj.Dir, cfg.Sandbox); err != nil {
		return nil, nil, err
	}
	for _, src := range cfg.Sandbox.ROBinds {
		if err := b.bindUserFrom(src, src, true, "sandbox.ro_binds", entryFrom(cfg, "sandbox.ro_binds", src)); err != nil {
			return nil, nil, err
		}
	}
	for _, src := range cfg.Sandbox.RWBinds {
		if err := b.bindUserFrom(src, src, false, "sandbox.rw_binds", entryFrom(cfg, "sandbox.rw_binds", src)); err != nil {
			return nil, nil, err
		}
	}
	for _, m := range cfg.Sandbox.HostMounts {
		if err := b.bindUserFrom(m.Source, m.Dest, m.ReadOnly, "sandbox.host_mounts", hostMountFrom(m)); err != nil {
			return nil, nil, err
		}
	}
	if err := b.hide(atOtherHome(cfg.Sandbox.HidePaths, h.Home, other), proj.Dir); err != nil {
		return nil, nil, err
	}
	th := ToolHost(h, pr, proj.Dir)
	th.ProxyCommand = b.sshProxyCommand
	enabled := enabledTools(cfg, reg, th)
	tenv, err := b.tools(enabled, th, h)
	if err != nil {
		return nil, nil, err
	}
	p.PrivateDirs = append(p.PrivateDirs, b.privateDirs...)
	warns = append(warns, b.warns...)
	if err := b.protectProject(proj.Dir); err != nil {
		return nil, nil, err
	}
	mm := maskMatcher{cfg.Sandbox.MaskFiles, cfg.Sandbox.MaskAllow, cfg.Sandbox.MaskSkip}
	p.Subdir = isolator.SubdirFiles{Names: subdirExecuted, Why: hostExecutedWhy}
	if extra := slices.Concat(yarnEnv.rc, yarnEnv.run); len(extra) > 0 {
		p.Subdir.Names = slices.Concat(subdirExecuted, extra)
	}
	found, err := findMaskedCached(pr, proj.Dir, mm, filepath.Join(state, "maskscan.cache"), !req.DryRun, p.Subdir)
	if err != nil {
		return nil, nil, fmt.Errorf("scanning %s for sandbox.mask_files: %w", proj.Dir, err)
	}
	if err := capScanned(proj.Dir, b.home, found); err != nil {
		return nil, nil, err
	}
	masked := found.masked
	if p.Subdir.Present, err = b.protectSubdir(proj.Dir, found.subdir); err != nil {
		return nil, nil, err
	}
	p.Tripwires = append(tripwires(pr, proj.Dir, b.git, b.hostFiles), b.yarnTripwires...)
	warns = append(warns, b.yarnWarns...)
	if p.Git, err = gitWatch(pr, b.git, found.nested, mm, proj.Dir, state); err != nil {
		return nil, nil, err
	}
	if err := refuseLinked(pr, masked, proj.Dir, p.SandboxHome); err != nil {
		return nil, nil, err
	}
	// A masked file behind a hide_paths mask is hidden already: masking it again would
	// show its name in a directory that appears empty.
	masked = slices.DeleteFunc(masked, b.behindMask)
	// Each directory between the project and a masked file is a mount point too, so it
	// cannot be renamed into a skipped directory (node_modules, .git), where the next
	// session would not look: a mounted directory cannot be moved (anchor.go).
	for _, f := range masked {
		if err := b.anchor(f, "sandbox.mask_files", true); err != nil {
			return nil, nil, err
		}
	}
	for _, f := range masked {
		b.add(isolator.Mount{Kind: isolator.MaskFile, Dest: f, Why: "sandbox.mask_files"})
	}
	if !cfg.Sandbox.DockerSocket {
		for _, s := range dockerSockets(cfg) {
			if pr.exists(s) && b.visible(s) {
				if err := b.anchor(s, "the docker socket mask (sandbox.docker_socket)", true); err != nil {
					return nil, nil, err
				}
				b.add(isolator.Mount{Kind: isolator.MaskFile, Dest: s, Why: "docker socket"})
			}
		}
	}
	// The host's ssh agent: the sandbox reaches it only through the ssh tool's
	// filtering relay, never at its own path, wherever that lies (/var/tmp, /opt, a
	// directory a bind shows). In a user's bind maskUserBinds masks it (a protected path).
	if agent := h.Vars["SSH_AUTH_SOCK"]; filepath.IsAbs(agent) {
		if r, err := pr.EvalSymlinks(agent); err == nil && b.showsHost(r) {
			if err := b.anchor(r, "the ssh agent's mask (SSH_AUTH_SOCK)", true); err != nil {
				return nil, nil, err
			}
			b.add(isolator.Mount{Kind: isolator.MaskFile, Dest: r, Why: "the host's ssh agent (SSH_AUTH_SOCK)"})
		}
	}
	// Every other socket of the host a view beyond the minimal one shows: the
	// default launch reads nothing more.
	if hostShown(cfg) && pr.UnixSockets != nil {
		socks, err := pr.UnixSockets()
		if err != nil {
			return nil, nil, fmt.Errorf("%w: listing the host's Unix sockets to mask them in the view (/proc/net/unix): %w; a read-only view does not stop connect(2) on them: mount /proc, or drop system_binds = [\"host\"] and the binds", isolator.ErrProtection, err)
		}
		var keep func(string) bool
		if cfg.Sandbox.DockerSocket { // the engines' sockets are shared
			engines := map[string]bool{}
			for _, s := range dockerSockets(cfg) {
				if r, err := pr.EvalSymlinks(s); err == nil {
					engines[r] = true
				}
			}
			keep = func(r string) bool { return engines[r] }
		}
		if err := b.maskHostSockets(socks, keep, proj.Dir); err != nil {
			return nil, nil, err
		}
	}
	// devsandbox's own configuration and state (trust records, the proxy CA's key,
	// other projects' homes) where the host's system view shows them: outside the home
	// with system_binds = ["host"] or a bound parent. Below the home the sandbox home
	// replaces them, in a user's bind maskUserBinds masks them.
	for _, own := range []string{h.ConfigHome, h.DataHome, h.StateHome} {
		d := filepath.Join(own, "devsandbox")
		if r, err := pr.EvalSymlinks(d); err == nil && b.covering(r) < 0 && b.visible(r) {
			b.add(isolator.Mount{Kind: isolator.MaskDir, Dest: r, Why: "devsandbox's own configuration and state"})
		}
	}
	// The proxy adds these credentials; the sandbox must not read them (credentials.go).
	for _, f := range credentialFiles(cfg) {
		if pr.exists(f) && b.visible(f) {
			if err := b.anchor(f, "proxy.credentials value_file", true); err != nil {
				return nil, nil, err
			}
			b.add(isolator.Mount{Kind: isolator.MaskFile, Dest: f, Why: "proxy.credentials value_file"})
		}
	}
	b.maskUserBinds()
	if p.System, err = b.view(); err != nil {
		return nil, nil, err
	}
	if err := b.checkSetHome(cfg.Env.Set, proj.Dir); err != nil {
		return nil, nil, err
	}
	p.Mounts = b.mounts

	for _, pub := range cfg.Egress.Publish {
		f, err := parsePublish(pub)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: egress.publish: %w", ErrConfig, err)
		}
		if mode == egress.Open && f.HostPort == f.SandboxPort {
			continue // the sandbox shares the host's network: the port is there already
		}
		p.Egress.Forwards = append(p.Egress.Forwards, f)
	}
	// In allowlist mode only what the user listed passes: tool hosts are not added.
	if p.Egress.Mode == egress.Proxy {
		for _, t := range enabled {
			es, err := egress.ParseEntries(t.Egress)
			if err != nil {
				return nil, nil, fmt.Errorf("tool %s: %w", t.Name, err)
			}
			p.Egress.ProxyAllow = append(p.Egress.ProxyAllow, es...)
		}
	}
	if mode == egress.Allowlist {
		if err := resolveAllowlist(p, pr, b); err != nil {
			return nil, nil, err
		}
		p.Mounts = b.mounts
	}
	// bubblewrap places each destination through the links of the view above it: an
	// absolute one of the host's leads out of its new root (viewlinks.go).
	if p.Mounts, err = resolveViewLinks(p, pr.viewHost()); err != nil {
		return nil, nil, err
	}
	p.Mounts = atBothHomes(p.Mounts, h.Home, p.SandboxHome)
	if len(p.Mounts) > maxMounts {
		return nil, nil, errTooManyMounts(proj.Dir, b.home, p.Mounts)
	}
	if err := refuseNotUTF8(proj.Dir, b.home, p.Mounts); err != nil {
		return nil, nil, err
	}

	if w := selfWritableWarning(p, selfDir); w != "" {
		warns = append(warns, w)
	}
	anchorSwappable(p)
	// One rule for every isolator: no new mount point in a directory the view takes
	// read-only from the host (isolator.MountPointRule).
	if err := isolator.MountPointRule(p, pr.Stat, pr.Lstat); err != nil {
		return nil, nil, err
	}

	p.Env, warns = environment(cfg, reg, h, tenv, proj, warns)
	p.Secrets, warns, err = secrets(cfg, enabled, h, pr, warns)
	if err != nil {
		return nil, nil, err
	}
	// The passwd entry names the command's HOME (env.set's too), where ssh reads.
	p.System.Passwd = sandboxPasswd(pr, p.System, p.User, commandHome(p.Env, p.User))
	// A credential the proxy adds never enters the sandbox (credentials.go).
	warns = withholdCredentials(p, cfg, h, pr, warns)
	if err := egressServices(p, cfg, pr, req); err != nil {
		return nil, nil, err
	}
	return p, warns, nil
}

// resolveAllowlist resolves the plain host names of the allow and deny lists once, at
// launch: they become firewall rules, and the allowed ones lines of the sandbox's
// /etc/hosts (DNS is closed inside). A name that does not resolve fails the launch,
// and so does an allowed one that resolves to an address only an IP or CIDR entry
// opens (audit.ByAddressOnly): one of this host's (pr.HostAddrs, the addresses the
// proxy refuses), a metadata, link-local or multicast one.
func resolveAllowlist(p *isolator.Plan, pr Probe, b *mountBuilder) error {
	seen := map[string]bool{}
	var local map[netip.Addr]bool // this host's addresses, read at the first allowed name
	isLocal := func(a netip.Addr) bool { return local[a] }
	for _, e := range append(append([]egress.Entry{}, p.Egress.Allow...), p.Egress.Deny...) {
		if e.IsAddress() || e.Wildcard || seen[e.Host] {
			continue
		}
		seen[e.Host] = true
		addrs, err := pr.LookupIP(e.Host)
		if err != nil || len(addrs) == 0 {
			return fmt.Errorf("%w: egress allowlist: %s does not resolve (%w); fix the name or use an IP address", ErrConfig, e.Host, err)
		}
		allowed := allows(p.Egress.Allow, e.Host)
		if allowed && local == nil {
			var err error
			if local, err = hostAddrs(pr); err != nil {
				return fmt.Errorf("egress allowlist: checking that %s does not resolve to this host: %w", e.Host, err)
			}
		}
		for i, a := range addrs {
			addrs[i] = a.Unmap()
			if class, what := audit.ClassifyAt(addrs[i], isLocal); audit.ByAddressOnly(class) && allowed {
				return fmt.Errorf("%w: egress allowlist: %s resolves to %s, %s, which only an IP or CIDR entry opens (a name's addresses are its DNS's choice); add the address as an entry if you mean to reach it", ErrConfig, e.Host, addrs[i], what)
			}
		}
		p.Egress.Resolved = append(p.Egress.Resolved, egress.Resolved{Host: e.Host, Port: e.Port, Addrs: addrs})
	}
	hosts, _ := pr.ReadFile("/etc/hosts")
	content := append(append([]byte{}, hosts...), []byte("# resolved by devsandbox at launch (egress allowlist)\n"+p.Egress.HostsFile())...)
	b.add(isolator.Mount{Kind: isolator.Data, Dest: "/etc/hosts", Content: content, Volatile: true, Why: "egress allowlist names"})
	return nil
}

// hostAddrs is the set of this host's addresses pr.HostAddrs lists (empty when nil).
func hostAddrs(pr Probe) (map[netip.Addr]bool, error) {
	set := map[netip.Addr]bool{}
	if pr.HostAddrs == nil {
		return set, nil
	}
	addrs, err := pr.HostAddrs()
	for _, a := range addrs {
		set[a.WithZone("").Unmap()] = true
	}
	return set, err
}

// allows reports whether an entry of allow is the plain host name host.
func allows(allow []egress.Entry, host string) bool {
	return slices.ContainsFunc(allow, func(e egress.Entry) bool { return !e.IsAddress() && !e.Wildcard && e.Host == host })
}

func environment(cfg *config.Config, reg *tools.Registry, h config.Host, toolEnv map[string]isolator.EnvVar, proj isolator.Project, warns []string) ([]isolator.EnvVar, []string) {
	env := map[string]isolator.EnvVar{}
	pass := func(name string) {
		if v, ok := h.Vars[name]; ok {
			env[name] = isolator.EnvVar{Name: name, Value: v, FromHost: true}
		}
	}
	passPattern := func(pat string) {
		if strings.HasSuffix(pat, "*") {
			prefix := strings.TrimSuffix(pat, "*")
			for n := range h.Vars {
				if strings.HasPrefix(n, prefix) {
					pass(n)
				}
			}
			return
		}
		pass(pat)
	}
	for _, n := range envAllowlist {
		passPattern(n)
	}
	if cfg.Env.PassthroughAll { // config.Load warns about it
		for n := range h.Vars {
			pass(n)
		}
	}
	for _, n := range cfg.Env.Passthrough {
		passPattern(n)
	}
	for n, v := range toolEnv {
		env[n] = v
	}
	for n, v := range cfg.Env.Set {
		env[n] = isolator.EnvVar{Name: n, Value: v}
	}
	if !cfg.Sandbox.DockerSocket {
		delete(env, "DOCKER_HOST")
	}
	for n, v := range env {
		if _, set := cfg.Env.Set[n]; (v.FromHost || set) && reg.Credential(n, v.Value) {
			v.Credential = true
			env[n] = v
		}
	}
	env[EnvMarker] = isolator.EnvVar{Name: EnvMarker, Value: "1"}
	env["DEVSANDBOX_PROJECT"] = isolator.EnvVar{Name: "DEVSANDBOX_PROJECT", Value: proj.Dir}
	for _, s := range cfg.Secrets.Env {
		delete(env, s) // a secret is delivered as a secret, never as plain env
	}
	out := make([]isolator.EnvVar, 0, len(env))
	for _, v := range env {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, warns
}

func secrets(cfg *config.Config, enabled []tools.Tool, h config.Host, pr Probe, warns []string) ([]isolator.Secret, []string, error) {
	var out []isolator.Secret
	seen := map[string]bool{}
	for _, n := range cfg.Secrets.Env {
		if _, ok := h.Vars[n]; !ok {
			warns = append(warns, fmt.Sprintf("secret %s is not set in the host environment; it is not passed", n))
			continue
		}
		seen[n] = true
		out = append(out, isolator.Secret{Name: n, EnvSource: n})
	}
	for _, t := range enabled {
		if tc, ok := cfg.Tools[t.Name]; ok && tc.Secrets != nil && !*tc.Secrets {
			continue
		}
		for _, n := range t.Secrets {
			if _, ok := h.Vars[n]; ok && !seen[n] {
				seen[n] = true
				out = append(out, isolator.Secret{Name: n, EnvSource: n})
			}
		}
	}
	names := make([]string, 0, len(cfg.Secrets.Files))
	for n := range cfg.Secrets.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		src := cfg.Secrets.Files[n]
		from, drop := "secrets.files."+n, "remove the entry"
		switch o := cfg.EntryOrigin("secrets.files."+n, ""); {
		case o == "flag --secret-file":
			from, drop = "--secret-file "+n+"="+src, "drop the flag"
		case o != "":
			from += " (" + o + ")"
		}
		fi, err := pr.Stat(src)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s: %s cannot be read (%w); fix the path or %s", ErrConfig, from, src, err, drop)
		}
		if !fi.Mode().IsRegular() {
			return nil, nil, fmt.Errorf("%w: %s: %s is not a regular file; name a file or %s", ErrConfig, from, src, drop)
		}
		out = append(out, isolator.Secret{Name: n, FileSource: src, AsFile: true})
	}
	return out, warns, nil
}

// withStats returns pr asking its Lstat and Stat through stats, which first lists
// the directories most questions about absent paths fall in: the home, its
// configuration and data directories (tools' files), and PATH (tools' commands; a
// large directory such as /usr/bin is not listed); and resolving links with a cache
// of its own (evalCache).
func withStats(pr Probe, stats *statCache, h config.Host) Probe {
	stats.listDirs(listNames, h.Home, h.ConfigHome, h.DataHome)
	stats.listDirs(listNames, filepath.SplitList(h.Vars["PATH"])...)
	pr.Lstat, pr.Stat = stats.Lstat, stats.Stat
	pr.EvalSymlinks = newEvalCache(pr.Lstat, pr.Readlink, pr.EvalSymlinks).eval
	return pr
}

// ToolHost returns the snapshot the tool registry reads for the project at dir.
// pr.LookPath decides whether a command exists; the host PATH, read through pr.Stat,
// says where.
func ToolHost(h config.Host, pr Probe, dir string) tools.Host {
	type found struct {
		path string
		ok   bool
	}
	seen := map[string]found{} // detection asks for the same names more than once
	look := pr.LookPath
	if look == nil && pr.osLinks {
		look = func(name string) bool { return lookPath(h.Vars["PATH"], name, pr.Stat) }
	}
	return tools.Host{Home: h.Home, Env: h.Vars, Exists: pr.exists, ReadFile: pr.ReadFile, ReadHead: pr.ReadHead, EvalSymlinks: pr.EvalSymlinks,
		Project: dir, ReadDir: pr.names, Memo: tools.NewMemo(),
		LookPath: func(name string) (string, bool) {
			if f, ok := seen[name]; ok {
				return f.path, f.ok
			}
			var f found
			if look != nil && look(name) {
				f = found{tools.FindExecutable(h.Vars["PATH"], name, pr.Stat), true}
			}
			seen[name] = f
			return f.path, f.ok
		},
	}
}

// enabledTools returns the tools enabled by config or, when not configured, detected.
func enabledTools(cfg *config.Config, reg *tools.Registry, th tools.Host) []tools.Tool {
	var out []tools.Tool
	for _, t := range reg.Tools() {
		on := false
		if tc, ok := cfg.Tools[t.Name]; ok && tc.Enabled != nil {
			on = *tc.Enabled
		} else if t.Detect != nil {
			on = t.Detect(th)
		}
		if on {
			out = append(out, t)
		}
	}
	return out
}

// tripwires lists the project paths the sandbox must not create unnoticed (see
// isolator.Tripwire): the files host tools run (names, see hostExecutedNames) that do
// not exist yet, and those the repository's git config includes or names.
func tripwires(pr Probe, dir string, git *gitLayout, names []string) []isolator.Tripwire {
	tw := append([]isolator.Tripwire(nil), git.tripwires...)
	if p := filepath.Join(dir, config.ProjectFileName); !pr.exists(p) {
		tw = append(tw, isolator.Tripwire{Path: p, Why: "devsandbox reads it as this project's configuration once you trust it (devsandbox config trust)"})
	}
	for _, rel := range names {
		switch p := filepath.Join(dir, rel); {
		case isPattern(rel):
			// Matches there at launch are read-only (protectProject), and the
			// watch counts them as there already.
			tw = append(tw, isolator.Tripwire{Path: p, Pattern: true, Why: hostExecutedWhy})
		case !pr.exists(p):
			tw = append(tw, isolator.Tripwire{Path: p, Why: hostExecutedWhy})
		}
	}
	return tw
}

// hostExecutedWhy says why a file host tools run is reported when the sandbox creates it.
const hostExecutedWhy = "tools on the host run what it names (hooks, MCP servers, tasks, plugins, toolchains, language servers)"

// gitWatch is what package watch checks during the run. The project's gitdir chain
// (a .git file's) is compared with the one the last run recorded: one that changed
// stops the run, as a sandbox may have rewritten it.
func gitWatch(pr Probe, git *gitLayout, nested []string, mm maskMatcher, dir, state string) (isolator.GitWatch, error) {
	w := isolator.GitWatch{
		Dirs: git.dirs, Index: git.index, Nested: nested,
		ScanMask: mm.mask, ScanAllow: mm.allow, ScanSkip: mm.skip, ScanCache: filepath.Join(state, "maskscan.cache"),
		Quarantine: filepath.Join(state, "quarantine"), PointerRecord: filepath.Join(state, "git-pointers"), Pointers: git.pointers,
	}
	if w.Pointers == "" {
		return w, nil
	}
	if rec, err := pr.ReadFile(w.PointerRecord); err == nil && string(rec) != w.Pointers {
		return w, fmt.Errorf("%w: the git dirs %s/.git leads to changed since the last run (were %q, now %q): a sandboxed program may have rewritten a pointer file to have this run mount another directory writable. If you moved or repaired the worktree yourself, remove %s and run again; else review %s/.git and the files it names", ErrProject, dir, strings.TrimSpace(string(rec)), strings.TrimSpace(w.Pointers), w.PointerRecord, dir)
	}
	return w, nil
}

// parsePublish reads "HOST_PORT:SANDBOX_PORT" or "PORT".
func parsePublish(s string) (egress.Forward, error) {
	h, sb, ok := strings.Cut(s, ":")
	if !ok {
		sb = h
	}
	hp, err1 := strconv.ParseUint(h, 10, 16)
	sp, err2 := strconv.ParseUint(sb, 10, 16)
	if err1 != nil || err2 != nil || hp == 0 || sp == 0 {
		return egress.Forward{}, fmt.Errorf("%q is not HOST_PORT:SANDBOX_PORT", s)
	}
	return egress.Forward{HostPort: uint16(hp), SandboxPort: uint16(sp)}, nil
}

// hostUser is the Plan's User for the host h.
func hostUser(h config.Host) isolator.User {
	return isolator.User{Name: h.User, UID: h.UID, GID: h.GID, HostHome: h.Home, Shell: h.Vars["SHELL"]}
}

// entryFrom is how errors name the entry value of the list key: with the file and line
// that gave it, when known.
func entryFrom(cfg *config.Config, key, value string) string {
	if o := cfg.EntryOrigin(key, value); o != "" {
		return key + " (" + o + ")"
	}
	return key
}

// hostMountFrom is how errors name the host mount m: by its flag (`--mount
// SRC:DST`) when it came from --mount, else as sandbox.host_mounts with the file and
// line that gave it.
func hostMountFrom(m config.Mount) string {
	switch {
	case m.Origin == "flag --mount":
		return "--mount " + m.String()
	case m.Origin != "":
		return "sandbox.host_mounts (" + m.Origin + ")"
	}
	return "sandbox.host_mounts"
}
