package bwrap

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/internal/sh"
	"github.com/devsandbox/devsandbox/internal/termsafe"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/diskguard"
	"github.com/devsandbox/devsandbox/isolator/etcsnap"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
	"github.com/devsandbox/devsandbox/syscalls"
)

// InitPath is where the devsandbox binary appears inside the sandbox; bwrap runs it as
// the command, and it execs the real one (see the init package).
const InitPath = isolator.InitPath

// ReadyFD is the descriptor on which the init reports that the sandbox is set up.
const ReadyFD = 3

// StatusFD is the descriptor on which the egress prologue reports (allowlist mode);
// data descriptors start after it.
const StatusFD = 4

// ProxySocket is where the host proxy's Unix socket appears inside the sandbox when
// the init relays to it (WrapArgv and Command, which have no readiness socket to hand
// a listener on); under Run it is not bound.
const ProxySocket = "/run/devsandbox/proxy.sock"

// PublishDir is where the host's publish directory appears inside the sandbox.
const PublishDir = "/run/devsandbox/publish"

// FileKind says where the bytes of a data file come from.
type FileKind int

const (
	Content     FileKind = iota // Spec.Files[i].Content
	SecretEnv                   // the host variable Source
	SecretFile                  // the host file Source
	HostFile                    // a system file copied from the host path Source
	Seccomp                     // the seccomp program in Content (bwrap's --seccomp)
	Pinned                      // the descriptor Run opened Plan.Mounts[Mount]'s source with
	EtcSnapshot                 // the /etc snapshot directory (in Source) of the entries in Snapshot
)

// File is one descriptor bwrap reads from: a --ro-bind-data or --file content, a
// mount source (--bind-fd, --ro-bind-fd) or the seccomp program.
type File struct {
	FD      int
	Dest    string
	Kind    FileKind
	Source  string
	Content []byte
	Mount   int `json:",omitempty"` // Pinned: the index of the mount in the rendered Plan
	// Snapshot is what the EtcSnapshot directory holds.
	Snapshot []etcsnap.Entry `json:",omitempty"`
}

// Spec is a rendered bwrap invocation.
type Spec struct {
	// reserveOf is the Plan whose disk reserve Script describes (diskguard.Script),
	// written only when a script is asked for: a run does not pay for the text.
	reserveOf *isolator.Plan
	// Prefix runs before bwrap, each part execing the next: the join step into the
	// session cgroup (Cgroup.Join) or systemd-run (a scope with the limits it
	// holds), then pasta and the egress prologue (allowlist mode), which execs bwrap
	// once the firewall is in place.
	Prefix []string
	// Prologue is set when Prefix runs the egress prologue, which reports on StatusFD.
	Prologue bool
	Argv     []string          // starting with "bwrap"
	Env      []isolator.EnvVar // the environment bwrap is started with (inherited by the command)
	Files    []File            // data descriptors, FD ascending from StatusFD+1
	// SecretEnv lists env secrets, delivered through the inherited environment.
	SecretEnv []isolator.Secret
	// Policy is the syscall policy the seccomp descriptor carries (for the script).
	Policy syscalls.Policy
	// Scope is the systemd scope the run is placed in for the limits it holds
	// (Prefix starts with systemd-run); "" when none is.
	Scope string
	// Cgroup is the session cgroup the run starts in for the limits it holds; nil
	// when none is.
	Cgroup *Cgroup
	// InitEnv is added to bwrap's environment for the init alone ("NAME=VALUE"): the
	// init removes it before it starts the command (wire.UnsetGOMAXPROCSArg).
	InitEnv []string
	// AwaitGo is set when the init waits for Run's go-ahead on ReadyFD before it
	// starts the command (wire.AwaitGoArg): the disk reserve's first reading, which
	// Run takes beside bwrap's setup.
	AwaitGo bool
	// Checks are what the init verifies before it runs the command: each pinned
	// source (a Mount with an ID) is at its destination, reached without a symlink.
	// Run hands them to the init in the manifest (wire.ManifestEnv).
	Checks []wire.Check
}

// renderOptions vary the rendering for library use (see WrapArgv).
type renderOptions struct {
	ready    bool // the init reports readiness on ReadyFD
	noCopies bool // bind /etc files instead of copying them through descriptors
	// passwdFile, with noCopies, is the host file SystemView.Passwd is bound from
	// (PasswdFile), instead of a descriptor.
	passwdFile string
	// noSnapshot copies /etc files through descriptors one by one instead of mounting
	// their snapshot (Run could not open one).
	noSnapshot bool
	// etc, when set, is what the snapshot Run opened holds: etcEntries of the Plan
	// rendered, worked out once more for it, with the trees it could not copy as
	// mount points (etcOpening.take). nil: render works them out, every tree copied.
	etc []etcsnap.Entry
	// limits says how each limit is enforced; nil is defaultEnforcement.
	limits *enforcement
	// cgroup is the session cgroup of the limits limits puts in one.
	cgroup *Cgroup
	// initAt reports whether the host file init is reached from the directory dir
	// without a symbolic link or a mount crossing (initReachable): then the init,
	// installed in a system directory the view binds read-only, runs where it is
	// instead of being bound at InitPath. nil: it is bound (library runs).
	initAt func(dir, init string) bool
}

// enforcement is how o enforces p's limits.
func (o renderOptions) enforcement(p *isolator.Plan) enforcement {
	if o.limits != nil {
		return *o.limits
	}
	return defaultEnforcement(p.Limits)
}

// render returns the bwrap invocation for p under the options o. It is pure: the host
// was probed when the Plan was built, and secret values are not read here. Nothing
// outside the package renders a Spec: Run and the Isolator's Render (--dry-run) render
// for devsandbox's own launch, WrapArgv and Command for a harness's, which they refuse
// while no watch covers the command; a Spec rendered otherwise would be a launch
// path without that check.
//
// Egress: open shares the host network; none has only loopback; proxy has only
// loopback too, plus the host proxy's Unix socket bound in, and the init's listener on
// egress.SandboxProxyAddr, which it hands to the proxy through Run (library use without
// readiness, WrapArgv, gets a relay the init starts instead); allowlist runs bwrap
// inside pasta's namespaces after PastaPrologue has put the firewall in place, with the
// same proxy listener for names.
func render(p *isolator.Plan, bin egress.Binaries, o renderOptions) (*Spec, error) {
	home := p.User.HostHome
	s := &Spec{reserveOf: p}
	a := []string{"bwrap", "--unshare-all"}
	switch p.Egress.Mode {
	case egress.Open:
		a = append(a, "--share-net")
	case egress.Allowlist:
		pro, err := egress.PastaPrologue(p.Egress, bin, StatusFD)
		if err != nil {
			return nil, err
		}
		s.Prefix = []string{bin.Pasta, "--config-net", "--quiet", "--no-map-gw",
			"-t", "none", "-u", "none", "-T", "none", "-U", "none",
			"--", "/bin/sh", "-c", pro, "devsandbox-egress"}
		s.Prologue = true
		// bwrap runs as root of pasta's user namespace: keep the user's identity and
		// pasta's network namespace, where the rules are.
		a = append(a, "--share-net", "--unshare-user", "--uid", fmt.Sprint(p.User.UID), "--gid", fmt.Sprint(p.User.GID))
	}
	a = append(a, "--die-with-parent", "--new-session", "--cap-drop", "ALL")
	if !p.Syscalls.Unfiltered && !p.Syscalls.Relaxed(syscalls.UserNS) {
		// Besides the syscall filter: a nested user namespace whose
		// max_user_namespaces the sandbox cannot raise (bwrap 0.8.0).
		if p.Egress.Mode != egress.Allowlist {
			a = append(a, "--unshare-user")
		}
		a = append(a, "--disable-userns")
	}

	// placed is what is at each destination so far, in order (see dataOp).
	var placed []viewEntry
	if p.System.Host {
		a = append(a, "--ro-bind", "/", "/")
		placed = append(placed, viewEntry{"/", placedSystem})
	} else {
		// bwrap's root: remounted read-only below, after everything is placed.
		placed = append(placed, viewEntry{"/", placedReadOnlyTmpfs})
	}
	fd := StatusFD + 1
	var etc []etcsnap.Entry
	snapshot := false
	switch {
	case o.noCopies || o.noSnapshot:
	case o.etc != nil:
		etc, snapshot = o.etc, true
	default:
		etc, snapshot = etcEntries(p)
	}
	// The snapshot may hold the sandbox's /etc/passwd itself (etcEntries).
	snapPlaced, passwdPlaced := false, snapshot && holdsPasswd(etc, p)
	for _, sp := range p.System.Paths {
		if snapshot && !snapPlaced && isolator.Within(sp.Path, "/etc") {
			// One read-only bind of the snapshot, before anything else in /etc: bwrap
			// pays one mount instead of a copy per file.
			a = append(a, "--ro-bind-fd", fmt.Sprint(fd), "/etc")
			s.Files = append(s.Files, File{FD: fd, Dest: "/etc", Kind: EtcSnapshot, Source: p.System.Snapshot, Snapshot: etc})
			placed = append(placed, viewEntry{"/etc", placedMount})
			fd++
			snapPlaced = true
		}
		switch {
		case sp.Copy && sp.Path == isolator.PasswdPath && p.System.Passwd != nil && o.passwdFile != "":
			// The user's entry names the command's home (SystemView.Passwd).
			a = append(a, "--ro-bind", o.passwdFile, sp.Path)
			placed = append(placed, viewEntry{sp.Path, placedMount})
			passwdPlaced = true
		case sp.Copy && sp.Path == isolator.PasswdPath && p.System.Passwd != nil && !snapshot:
			// The user's entry names the command's home (SystemView.Passwd).
			a = append(a, "--perms", "0444", "--file", fmt.Sprint(fd), sp.Path)
			s.Files = append(s.Files, File{FD: fd, Dest: sp.Path, Kind: Content, Content: p.System.Passwd})
			placed = append(placed, viewEntry{sp.Path, placedOther})
			fd++
			passwdPlaced = true
		case sp.Copy && o.noCopies:
			a = append(a, "--ro-bind-try", sp.Path, sp.Path)
			placed = append(placed, viewEntry{sp.Path, placedMount})
		case sp.Copy && snapshot, snapshot && copiedTree(etc, sp.Path):
			// in the snapshot
		case sp.Copy:
			a = append(a, "--perms", "0444", "--file", fmt.Sprint(fd), sp.Path)
			s.Files = append(s.Files, File{FD: fd, Dest: sp.Path, Kind: HostFile, Source: sp.Path})
			placed = append(placed, viewEntry{sp.Path, placedOther})
			fd++
		case sp.Link != "":
			a = append(a, "--symlink", sp.Link, sp.Path)
			placed = append(placed, viewEntry{sp.Path, placedOther})
		case sp.Optional:
			a = append(a, "--ro-bind-try", sp.Path, sp.Path)
			placed = append(placed, viewEntry{sp.Path, placedSystem})
		default:
			a = append(a, "--ro-bind", sp.Path, sp.Path)
			placed = append(placed, viewEntry{sp.Path, placedSystem})
		}
	}
	switch {
	case p.System.Passwd != nil && !passwdPlaced && o.passwdFile != "":
		// Over the host's file (a bound /etc or the host's root).
		a = append(a, "--ro-bind", o.passwdFile, isolator.PasswdPath)
		placed = append(placed, viewEntry{isolator.PasswdPath, placedMount})
	case p.System.Passwd != nil && !passwdPlaced:
		// Over the host's file (in the snapshot, a bound /etc or the host's root):
		// the user's entry names the command's home (SystemView.Passwd).
		a = append(a, "--perms", "0444", "--ro-bind-data", fmt.Sprint(fd), isolator.PasswdPath)
		s.Files = append(s.Files, File{FD: fd, Dest: isolator.PasswdPath, Kind: Content, Content: p.System.Passwd})
		placed = append(placed, viewEntry{isolator.PasswdPath, placedOther})
		fd++
	}
	a = append(a, "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/run")
	placed = append(placed, viewEntry{"/dev", placedMount}, viewEntry{"/proc", placedMount}, viewEntry{"/run", placedMount})

	switch p.Tmp.Kind {
	case "tmpfs":
		if p.Tmp.Size > 0 {
			a = append(a, "--size", strconv.FormatInt(p.Tmp.Size, 10))
		}
		a = append(a, "--tmpfs", "/tmp")
	case "session", "shm":
		if p.Tmp.Size > 0 {
			// A directory of a host file system: no size applies to it, and a
			// limit asked for and not applied is a run without it.
			return nil, fmt.Errorf("%w: sandbox.tmp_size bounds a tmpfs /tmp, but sandbox.tmp = %q puts /tmp in %s on a host file system, which no size bounds; set sandbox.tmp = \"tmpfs\" (or remove sandbox.tmp_size)", isolator.ErrConfig, p.Tmp.Kind, p.Tmp.Dir)
		}
		sess := p.Tmp.Session
		if sess == "" {
			sess = "<session>"
		}
		a = append(a, "--bind", p.Tmp.Dir+"/"+sess, "/tmp")
	default:
		return nil, fmt.Errorf("unknown sandbox.tmp %q", p.Tmp.Kind)
	}
	placed = append(placed, viewEntry{"/tmp", placedMount})

	var readOnlyDirs []string
	shown := map[int]bool{}
	for i, m := range p.Mounts {
		// A repetition of the mount before it at the same place (the planner repeats a
		// mount below the home at its host path for containers, isolator.Mount.Repeats)
		// would cost a mount and change nothing.
		if shownAlready(p.Mounts, i, home) || i > 0 && m.Repeats(p.Mounts[i-1], home) {
			shown[i] = true
		}
	}
	for i, m := range p.Mounts {
		dst := m.Target(home)
		if shown[i] {
			continue
		}
		switch m.Kind {
		case isolator.Bind:
			op := "--bind"
			if m.ReadOnly {
				op = "--ro-bind"
			}
			placed = append(placed, viewEntry{dst, placedMount})
			if m.ID != nil {
				// Run opened the source: bwrap mounts that very file.
				a = append(a, op+"-fd", fmt.Sprint(fd), dst)
				s.Files = append(s.Files, File{FD: fd, Dest: dst, Kind: Pinned, Source: m.Source, Mount: i})
				fd++
				continue
			}
			if m.Optional {
				op += "-try"
			}
			a = append(a, op, m.Source, dst)
		case isolator.MaskFile:
			a = append(a, "--ro-bind", p.EmptyFile, dst)
			placed = append(placed, viewEntry{dst, placedMount})
		case isolator.MaskDir:
			a = append(a, "--tmpfs", dst)
			readOnlyDirs = append(readOnlyDirs, dst)
			placed = append(placed, viewEntry{dst, placedReadOnlyTmpfs})
		case isolator.TmpDir:
			a = append(a, "--tmpfs", dst)
			placed = append(placed, viewEntry{dst, placedMount})
		case isolator.Data:
			a = append(a, "--perms", "0444", dataOp(placed, dst), fmt.Sprint(fd), dst)
			s.Files = append(s.Files, File{FD: fd, Dest: dst, Kind: Content, Content: m.Content})
			placed = append(placed, viewEntry{dst, placedOther})
			fd++
		default:
			return nil, fmt.Errorf("mount %s: unknown kind %d", dst, m.Kind)
		}
	}
	for _, sec := range p.Secrets {
		if !sec.AsFile {
			s.SecretEnv = append(s.SecretEnv, sec)
			continue
		}
		f := File{FD: fd, Dest: sec.SecretPath(), Kind: SecretFile, Source: sec.FileSource}
		if sec.FileSource == "" {
			f.Kind, f.Source = SecretEnv, sec.EnvSource
		}
		a = append(a, "--perms", "0400", "--ro-bind-data", fmt.Sprint(fd), f.Dest)
		placed = append(placed, viewEntry{f.Dest, placedMount})
		s.Files = append(s.Files, f)
		fd++
	}
	for _, d := range readOnlyDirs {
		a = append(a, "--remount-ro", d)
	}
	s.Checks = identityChecks(p, shown)
	if !p.System.Host {
		// bwrap's root is a tmpfs holding the copied /etc files and mount points.
		a = append(a, "--remount-ro", "/")
	}
	if !p.Syscalls.Unfiltered {
		if initBinary(p) == "" {
			// bwrap's own pid 1 would run without the filter, and a process the
			// command can ptrace is a way around it: the init is the sandbox's pid 1.
			return nil, fmt.Errorf("the syscall policy needs devsandbox-init (Plan.Self) as the sandbox's pid 1; set Plan.Self, or Plan.Syscalls.Unfiltered to run without a syscall filter")
		}
		arch, err := syscalls.Native()
		if err != nil {
			return nil, fmt.Errorf("%w; the sandbox's syscall policy cannot be applied", err)
		}
		prog, err := syscalls.Seccomp(p.Syscalls, arch)
		if err != nil {
			return nil, err
		}
		// The last descriptor: nothing after it needs one.
		a = append(a, "--seccomp", fmt.Sprint(fd))
		s.Files = append(s.Files, File{FD: fd, Dest: "seccomp", Kind: Seccomp, Content: prog})
	}
	s.Policy = p.Syscalls
	if initBinary(p) != "" {
		a = append(a, "--as-pid-1")
	}
	var initArgs []string
	if o.enforcement(p).pids == byRlimit {
		initArgs = append(initArgs, fmt.Sprintf("--nproc=%d", p.Limits.Pids))
	}
	if p.Egress.NeedsProxy() {
		if p.Egress.Proxy.Unix == "" {
			return nil, fmt.Errorf("egress mode %s needs the session proxy's Unix socket", p.Egress.Mode)
		}
		if o.ready {
			// The init hands its listener to the proxy through devsandbox (Run):
			// connections go from the command straight to the proxy, and nothing in
			// the sandbox needs the proxy's Unix socket, so it is not bound in (one
			// mount fewer, and one host socket fewer within the sandbox's reach).
			initArgs = append(initArgs, "--proxy-listen="+egress.SandboxProxyAddr)
		} else {
			a = append(a, "--ro-bind", p.Egress.Proxy.Unix, ProxySocket)
			placed = append(placed, viewEntry{ProxySocket, placedMount})
			initArgs = append(initArgs, "--forward="+egress.SandboxProxyAddr+"="+ProxySocket)
		}
	}
	if len(p.Egress.Forwards) > 0 {
		if p.Egress.PublishDir == "" {
			return nil, fmt.Errorf("published ports need a publish directory")
		}
		a = append(a, "--bind", p.Egress.PublishDir, PublishDir)
		placed = append(placed, viewEntry{PublishDir, placedMount})
		for _, f := range p.Egress.Forwards {
			initArgs = append(initArgs, fmt.Sprintf("--publish=%d=%s/%d.sock", f.SandboxPort, PublishDir, f.SandboxPort))
		}
	}
	if initBinary(p) == "" {
		// Library use without an init: the command runs directly (and so does not get
		// 126/127 told apart from bwrap's own failure, nor a proxy forwarder).
		if len(initArgs) > 0 {
			return nil, fmt.Errorf("egress mode %s and limits.pids need devsandbox-init (Plan.Self)", p.Egress.Mode)
		}
		// A loader variable reaches bwrap renamed (wire.HostSafeEnv) and only the init
		// names it back: without one the command would get it renamed, and bwrap on
		// the host must not get it as it is.
		for _, e := range p.Env {
			if wire.LoaderVar(e.Name) {
				return nil, fmt.Errorf("the variable %s is for the dynamic loader, which bwrap on the host would obey; it reaches the command only through devsandbox-init (Plan.Self), so set Plan.Self or leave %s out of Plan.Env", e.Name, e.Name)
			}
		}
		for _, sec := range s.SecretEnv {
			if wire.LoaderVar(sec.Name) {
				return nil, fmt.Errorf("the secret %s names a variable of the dynamic loader, which bwrap on the host would obey; it reaches the command only through devsandbox-init (Plan.Self), so set Plan.Self or give the secret as a file", sec.Name)
			}
		}
		s.Argv = append(append(a, "--chdir", p.Workdir, "--"), p.Command...)
		return withLimits(s, p, o)
	}
	initBin := InitPath
	// In the proxy modes ssh's ProxyCommand runs the init at InitPath: mount it there.
	if !p.Egress.NeedsProxy() && initInView(p, placed, o.initAt) {
		initBin = initBinary(p)
	} else {
		a = append(a, "--ro-bind", initBinary(p), InitPath)
	}
	a = append(a, "--chdir", p.Workdir, "--", initBin)
	if p.TTY {
		a = append(a, "--tty")
	}
	// The init's Go runtime starts with one P unless the command's environment sets
	// GOMAXPROCS (which the init must then pass on as it is).
	if !setsEnv(p, "GOMAXPROCS") {
		a = append(a, wire.UnsetGOMAXPROCSArg)
		s.InitEnv = []string{wire.InitGOMAXPROCS}
	}
	a = append(a, initArgs...)
	if p.Egress.Mode == egress.Open {
		// The host's network namespace holds the host's abstract Unix sockets.
		a = append(a, wire.ScopeAbstractArg)
	}
	if o.ready {
		a = append(a, fmt.Sprintf("--ready-fd=%d", ReadyFD))
		if p.Limits.DiskReserve > 0 {
			// Run reads the reserve beside bwrap's setup; the init starts the
			// command only after its go-ahead.
			a = append(a, wire.AwaitGoArg)
			s.AwaitGo = true
		}
	}
	a = append(a, "--")
	a = append(a, p.Command...)
	s.Argv = a
	return withLimits(s, p, o)
}

// setsEnv reports whether the command's environment in p has the variable name.
func setsEnv(p *isolator.Plan, name string) bool {
	for _, e := range p.Env {
		if e.Name == name {
			return true
		}
	}
	for _, sec := range p.Secrets {
		if !sec.AsFile && sec.Name == name {
			return true
		}
	}
	return false
}

// withLimits finishes s: the environment, and what places the run in the scope or
// the session cgroup of its limits.
func withLimits(s *Spec, p *isolator.Plan, o renderOptions) (*Spec, error) {
	s.Env = p.Env
	e := o.enforcement(p)
	if e.uses(byScope) {
		s.Scope = scopeName(p)
		s.Prefix = append(scopePrefix(p, e, s.Scope), s.Prefix...)
	}
	if e.uses(byCgroup) {
		if o.cgroup == nil {
			return nil, fmt.Errorf("the limits enforced by a session cgroup need its placement")
		}
		s.Cgroup = o.cgroup
		if o.cgroup.Join {
			join, err := joinPrefix(p, o.cgroup)
			if err != nil {
				return nil, err
			}
			s.Prefix = append(join, s.Prefix...)
		}
	}
	return s, nil
}

// viewEntry is what render put at a destination: a mount (a bind, a tmpfs the
// sandbox may write, /dev, /proc), a tmpfs it remounts read-only once every file is
// in place (bwrap's root, a masked directory), or something else (a file, a link).
type viewEntry struct {
	path string
	kind placedKind
}

type placedKind int

const (
	placedMount placedKind = iota
	placedReadOnlyTmpfs
	placedOther
	// placedSystem is a read-only bind of a host system path at the same path (or of
	// the host's root): below it, the sandbox sees the host's files.
	placedSystem
)

// dataOp returns how bwrap places a generated file at dst, given what is placed so
// far. Where dst lies in a tmpfs that is remounted read-only after every file is in
// place (the ssh tool's config in the masked ~/.ssh), the file is written into it
// (--file): read-only by the directory's mount, as the copied /etc files are by the
// root's. That saves bwrap a bind mount, whose remount reads all of
// /proc/self/mountinfo (bubblewrap 0.8). Anywhere else, below a bind, a writable
// tmpfs or a link, or over something already at dst, the file is bound read-only
// on its own (--ro-bind-data).
func dataOp(placed []viewEntry, dst string) string {
	// The last mount at or above dst is what dst is in: a later one hides an
	// earlier one, at the same path, above or below it.
	in := -1
	for i, pl := range placed {
		if !isolator.Within(dst, pl.path) {
			continue
		}
		if pl.path == dst || pl.kind == placedOther {
			return "--ro-bind-data" // something is at dst already, or a link is on the way
		}
		in = i
	}
	if in >= 0 && placed[in].kind == placedReadOnlyTmpfs {
		return "--file"
	}
	return "--ro-bind-data"
}

// shownAlready reports whether the read-only bind mounts[i] would show nothing that an
// earlier mount does not show already: the latest of mounts[:i] whose destination
// holds mounts[i]'s is a read-only bind of a directory holding mounts[i]'s source at the
// same place below it, and no mount between them lies at or below mounts[i]'s
// destination. bubblewrap binds recursively and remounts what lies below read-only, so
// the earlier bind shows the same file there, read-only, with the same mounts below it;
// a second bind would cost bubblewrap 0.8 a mount, a remount and a scan of the mount
// table. This is the case of a tool installed under another tool's directory (agent
// CLIs as npm globals under ~/.nvm, each binding the same bin directory and its
// package). Anchors are kept: they are bound to be mount points.
func shownAlready(mounts []isolator.Mount, i int, home string) bool {
	m := mounts[i]
	if !m.ReadOnly || m.Anchor || m.Source == "" {
		return false
	}
	dst := m.Target(home)
	for j := i - 1; j >= 0; j-- {
		a := mounts[j]
		ad := a.Target(home)
		switch {
		case isolator.Within(dst, ad):
			return a.Kind == isolator.Bind && a.ReadOnly && !a.Anchor && a.Source != "" &&
				isolator.Within(m.Source, a.Source) && below(m.Source, a.Source) == below(dst, ad)
		case isolator.Within(ad, dst):
			return false // it covers part of what mounts[i] would show
		}
	}
	return false
}

// below returns p's part below dir ("" for dir itself, else starting with "/"); p is
// dir or below it.
func below(p, dir string) string {
	if dir == "/" {
		return p
	}
	return p[len(dir):]
}

// identityChecks lists, for each visible mount with an ID (a pinned bind source, a
// file mask), the check that the file at its destination is that one. The binds left
// out as shown already are not mounts to check: the bind that shows them is.
func identityChecks(p *isolator.Plan, shown map[int]bool) []wire.Check {
	if len(shown) > 0 {
		cp := *p
		cp.Mounts = nil
		for i, m := range p.Mounts {
			if !shown[i] {
				cp.Mounts = append(cp.Mounts, m)
			}
		}
		p = &cp
	}
	var cs []wire.Check
	for _, m := range isolator.VisibleMounts(p, p.User.HostHome) {
		if m.ID == nil {
			continue
		}
		c := wire.Check{Kind: wire.CheckRW, Path: m.Path, Dev: m.ID.Dev, Ino: m.ID.Ino}
		switch {
		case m.Kind == isolator.MaskFile:
			c.Kind, c.MayVanish = wire.CheckMaskFile, m.Optional
		case m.ReadOnly:
			c.Kind = wire.CheckRO
		}
		cs = append(cs, c)
	}
	return cs
}

// initBinary is the host path of the init bwrap runs: Plan.BwrapInit, else
// Plan.Self; empty without an init.
func initBinary(p *isolator.Plan) string {
	if p.BwrapInit != "" {
		return p.BwrapInit
	}
	return p.Self
}

// initInView reports whether the init binary is a standalone init
// (devsandbox-bwrap-init, devsandbox-init) that the sandbox already shows at its host
// path, as that very file: installed in a system directory the view binds read-only
// (under /usr, as `make install` puts it), saving a mount. It is only when
//   - the last thing placed at or above its path is that system bind: no bind, tmpfs,
//     link or file of the plan (a host mount of a directory the sandbox can write,
//     over the one that holds it) replaces it inside, and
//   - initAt, which looks at the host, finds it below that directory without a
//     symbolic link (one could lead inside to a path the sandbox writes, such as its
//     home) or a mount crossing.
//
// Without initAt (a pure rendering) it is bound. devsandbox itself acts as the init
// only when started as InitPath, so it is always mounted there.
func initInView(p *isolator.Plan, placed []viewEntry, initAt func(dir, init string) bool) bool {
	self := initBinary(p)
	if b := filepath.Base(self); b != "devsandbox-init" && b != "devsandbox-bwrap-init" {
		return false
	}
	if initAt == nil {
		return false
	}
	in := -1
	for i, pl := range placed {
		if isolator.Within(self, pl.path) {
			in = i
		}
	}
	if in < 0 || placed[in].kind != placedSystem {
		return false
	}
	if p.System.Host {
		// The host root is visible, but the home, /tmp and /run are replaced: only
		// the system directories are certain to show the host's files.
		sys := false
		for _, d := range []string{"/usr", "/opt", "/bin", "/sbin"} {
			sys = sys || isolator.Within(self, d)
		}
		if !sys {
			return false
		}
	}
	return initAt(placed[in].path, self)
}

// Script renders the spec as a shell command people can read; values of secrets and
// passthrough variables appear as names only.
func (s *Spec) Script() string {
	var b strings.Builder
	if s.reserveOf != nil {
		b.WriteString(diskguard.Script(s.reserveOf))
	}
	b.WriteString("# environment of bwrap (inherited by the command):\n")
	// A variable of the dynamic loader's reaches bwrap renamed (wire.HostSafeEnv).
	renamed := func(name string) string {
		if wire.LoaderVar(name) {
			return " (to bwrap as " + wire.LoaderEnvPrefix + name + ": the init names it back)"
		}
		return ""
	}
	for _, e := range s.Env {
		if e.FromHost {
			fmt.Fprintf(&b, "#   %s (value from the host environment)%s\n", e.Name, renamed(e.Name))
		} else {
			fmt.Fprintf(&b, "#   %s=%s%s\n", e.Name, sh.Quote(e.Value), renamed(e.Name))
		}
	}
	for _, sec := range s.SecretEnv {
		fmt.Fprintf(&b, "#   %s (secret, value from the host environment)%s\n", sec.Name, renamed(sec.Name))
	}
	for _, e := range s.InitEnv {
		fmt.Fprintf(&b, "#   %s (the init's alone: it removes it before it starts the command)\n", e)
	}
	for _, f := range s.Files {
		switch f.Kind {
		case Pinned:
			fmt.Fprintf(&b, "# fd %d: %s, opened by devsandbox without following symlinks\n", f.FD, termsafe.Line(f.Source))
		case Content:
			fmt.Fprintf(&b, "# fd %d: generated file for %s (%d bytes)\n", f.FD, termsafe.Line(f.Dest), len(f.Content))
		case SecretEnv:
			fmt.Fprintf(&b, "# fd %d: secret %s from the host variable %s\n", f.FD, termsafe.Line(f.Dest), termsafe.Line(f.Source))
		case SecretFile:
			fmt.Fprintf(&b, "# fd %d: secret %s from the host file %s\n", f.FD, termsafe.Line(f.Dest), termsafe.Line(f.Source))
		case HostFile:
			fmt.Fprintf(&b, "# fd %d: copy of the host file %s\n", f.FD, termsafe.Line(f.Source))
		case EtcSnapshot:
			b.WriteString(etcScript(f))
		case Seccomp:
			fmt.Fprintf(&b, "# fd %d: seccomp program of the syscall policy (%s)\n", f.FD, s.Policy)
		}
	}
	if s.AwaitGo {
		fmt.Fprintf(&b, "# fd %d: readiness report of the init, and the go-ahead it waits for before the command (the disk reserve's first reading)\n", ReadyFD)
	} else {
		fmt.Fprintf(&b, "# fd %d: readiness report of the init\n", ReadyFD)
	}
	if s.Prologue {
		fmt.Fprintf(&b, "# fd %d: status of the egress prologue\n", StatusFD)
	}
	if c := s.Cgroup; c != nil {
		how := "bwrap is started in it (CLONE_INTO_CGROUP)"
		if c.Join {
			how = "the join step below moves itself in before it execs the rest"
		}
		fmt.Fprintf(&b, "# session cgroup (%s), removed after the run; %s:\n", strings.Join(c.Limits, ", "), how)
		for _, d := range c.Dirs {
			fmt.Fprintf(&b, "#   %s\n", d)
		}
	}
	if len(s.Prefix) > 0 {
		b.WriteString("# run first, each execs the next (" + prefixParts(s) + "), then bwrap:\n")
		for i, arg := range s.Prefix {
			if i > 0 {
				b.WriteByte(' ')
			}
			if i > 0 && s.Prefix[i-1] == "-c" { // the egress prologue, devsandbox's own script
				b.WriteString(sh.QuoteText(arg))
				continue
			}
			b.WriteString(sh.Quote(arg))
		}
		b.WriteString(" \\\n  ")
	}
	for i, arg := range s.Argv {
		if i > 0 {
			if strings.HasPrefix(arg, "--") && !(i >= 2 && s.Argv[i-2] == "--perms") && !afterSeparator(s.Argv, i) {
				b.WriteString(" \\\n  ")
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteString(sh.Quote(arg))
	}
	b.WriteByte('\n')
	return b.String()
}

// prefixParts says what the parts of s.Prefix are, for the script.
func prefixParts(s *Spec) string {
	var parts []string
	if s.Cgroup != nil && s.Cgroup.Join {
		parts = append(parts, "devsandbox-init: the join step into the session cgroup")
	}
	if s.Scope != "" {
		parts = append(parts, "systemd-run: a scope with the limits it holds")
	}
	if s.Prologue {
		parts = append(parts, "pasta and the egress prologue: the firewall")
	}
	return strings.Join(parts, "; ")
}

// afterSeparator reports whether argv[i] follows bwrap's own "--".
func afterSeparator(argv []string, i int) bool {
	for j := 1; j < i; j++ {
		if argv[j] == "--" {
			return true
		}
	}
	return false
}
