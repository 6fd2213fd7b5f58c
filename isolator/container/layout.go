// Package container is the core the container isolators (docker, krun) share: what a
// Plan looks like from inside a container with its own home, computed once, engine
// neutral. Lay (pure) turns a Plan into a Layout: the mounts in order (optional binds
// marked, later mounts covering earlier ones already dropped), the generated host
// files they bind, the manifest devsandbox-init verifies, the environment, the
// passwd and group files and the init's command line. Prepare makes the host side of
// a Layout and drops the optional binds whose source is gone, manifest checks
// included, before a backend translates it; WriteFiles writes the generated files
// after. The wire session (secrets, input,
// window sizes, signals, the init's report) and the script helpers of --dry-run are
// here too. The backends translate a Layout into their engine's spec (docker's
// containerConfig, krun's specGen) and add only what is theirs.
//
// It imports no engine client.
package container

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// Where devsandbox's own files appear in every container.
const (
	// InitPath is devsandbox-init: the entrypoint, and where tools such as ssh's
	// ProxyCommand expect it.
	InitPath = isolator.InitPath
	// ProxySocket is the session proxy's Unix socket (egress proxy and allowlist).
	ProxySocket = "/run/devsandbox/proxy.sock"
	// PublishDir is the session's publish directory (egress.Rules.PublishDir): the
	// init serves each published port there as <SANDBOX_PORT>.sock.
	PublishDir = "/run/devsandbox/publish"
	// EndpointDir is where a kept container sees the project's socket directory
	// (egress.Rules.SocketDir): the live sessions' proxy sockets and publish
	// directories; or, with Options.EndpointVolume, where every container sees the
	// engine-side volume it shares with the session's companion.
	EndpointDir = "/run/devsandbox/ep"
	// AgentDir is the directory, a tmpfs of root's, where a container with
	// Options.AgentSocket serves the ssh agent: one socket per session.
	AgentDir = "/run/devsandbox/agent"
	// ShipDir is where a Shipped layout's image holds devsandbox's programs (the init
	// at InitPath), root's, on the container's read-only root file system.
	ShipDir = "/run/devsandbox"
)

// Labels on everything the container backends create.
const (
	LabelProject = "dev.devsandbox.project" // project id
	LabelName    = "dev.devsandbox.name"    // <basename>-<id>
	LabelDir     = "dev.devsandbox.dir"     // the project's path on the host
	LabelVersion = "dev.devsandbox.version" // devsandbox version that created it
)

// initArg is the init's container mode (init.ContainerArg; not imported: the init
// package is Linux-only).
const initArg = "--container"

// Options are what a backend settles beyond the Plan.
type Options struct {
	Home string // the in-container home (docker.home); "" is /home/<user>
	// InitSource is the host path of devsandbox-init bound at InitPath; "" is the
	// Plan's Self.
	InitSource string
	// FilesDir is the host directory of the generated files (in the state directory).
	FilesDir string
	// BootID is the host's boot id (pin.BootID), set for runs whose init sees the
	// host's kernel: it compares the identities of pinned mount sources only there.
	BootID string
	// Keep: the container outlives sessions (docker.keep_container), and each
	// session runs in it by an exec (see Layout.Session).
	Keep bool
	// HomeVolume, when set, is the named volume that backs the home instead of a
	// bind of the Plan's SandboxHome (remote engines, Docker Desktop).
	HomeVolume string
	// VM: the container is a microVM (krun): the guest sees host files through
	// virtio-fs, has a loopback and a kernel of its own.
	VM bool
	// Nproc, when set, is RLIMIT_NPROC the init sets for the command (an engine
	// without a pids cgroup).
	Nproc int
	// OwnTmp: the image is run as it is, with no layer of devsandbox's to make the
	// directory under /tmp 1777 (krun), and runc gives a tmpfs the mode of the
	// directory it covers, over its mode option: an image's 0755 /tmp would be
	// unwritable. /tmp is then owned by the sandbox user, and the init gives it mode
	// 1777 (Manifest.Sticky) before the command starts.
	OwnTmp bool
	// OwnHosts: the engine writes /etc/hosts only for a container with a network
	// (docker's Config.NetworkDisabled), so a container whose Network is "none"
	// binds LoopbackHosts (a content of a Shipped layout), where the Plan has no
	// /etc/hosts of its own.
	OwnHosts bool
	// Shipped: the container gets nothing from the host's files but the project, the
	// home and the user's mounts (DESIGN guarantee 11). The init is not bound: it is
	// in the image the backend derives from the user's, at InitPath, with the files
	// the layout lists in ImageFiles (passwd, group, the CA bundle), on the read-only
	// root, which therefore has no tmpfs on /run. File masks bind MaskSource. The
	// egress endpoints are EndpointVolume.
	Shipped bool
	// MaskSource, with Shipped, is the empty read-only file on the engine's machine
	// that file masks bind (a file of this host's state directory is not there when
	// the engine runs elsewhere).
	MaskSource string
	// ContentSource, with Shipped, is the path on the engine's machine of a
	// read-only file holding content: where generated data below a mount (the home,
	// the project, a tool's binding), which the image cannot carry, is bound from
	// instead of this host's state directory. The layout lists each in Contents.
	ContentSource func(content []byte) string
	// VolatileSource, with Shipped and Keep, is the path on the engine's machine of
	// the root-owned file a kept container binds at dst for Data that changes from
	// session to session (the backend rewrites it in place per session). The
	// layout lists each in Volatile.
	VolatileSource func(dst string) string
	// EndpointVolume, with Shipped, is the engine-side volume at EndpointDir that the
	// container shares with the session's companion (package proxy/companion): the
	// proxy's socket and the published ports' sockets, for one-shot and kept
	// containers alike.
	EndpointVolume string
	// AgentSocket, when set, is where the container serves the session's ssh agent
	// itself, in AgentDir (the docker isolator carries each connection to this host's
	// filtering relay over the Engine API, package sshagent): SSH_AUTH_SOCK names it,
	// and the Plan must hold no bind of the relay's socket.
	AgentSocket string
	// AgentBound, with AgentSocket, is where the engine binds the session's relay
	// socket from this host (the docker isolator binds it itself, on a local
	// engine): the init tries it first (wire.Manifest.AgentBound), proving it
	// with the relay's probe key AgentKey.
	AgentBound string
	AgentKey   []byte
}

// MountType is what a Mount puts at its target.
type MountType int

const (
	Bind    MountType = iota // Source (a host path) at Target
	Volume                   // the named volume Source at Target
	MaskDir                  // an empty read-only tmpfs: a hidden directory
	Scratch                  // a writable tmpfs (Tmpfs says how)
)

// Mount is one mount of a Layout.
type Mount struct {
	Type     MountType
	Source   string
	Target   string
	ReadOnly bool
	// Optional marks a Bind whose source may vanish before launch: Prepare drops it,
	// with its check, as bwrap's --ro-bind-try does.
	Optional bool
	// Anchor marks a Bind whose source the sandbox can swap for a symlink
	// (isolator.Mount.Anchor). A backend must have the engine bind the pinned file,
	// not the path: an engine that binds the path after a swap binds where the link
	// leads and makes the mount points in it there, on the host.
	Anchor bool
	Tmpfs  Tmpfs // Scratch
}

// Tmpfs are a Scratch mount's options beyond rw, nosuid and nodev.
type Tmpfs struct {
	Mode   string // octal, as written in the options ("1777")
	Exec   bool   // "exec"
	NoExec bool   // "noexec"
	Size   int64  // "size=" in bytes; 0: none (the kernel's default, half the memory)
	Owned  bool   // owned by the sandbox user
	As     string // owned by another: its ownership option (UIDGID), over Owned
}

// HostFile is a generated, non-secret file written on the host before the container is
// created; its name is a hash of its content, so a kept container's spec does not
// change between sessions.
type HostFile struct {
	Path    string
	Content []byte
	// InPlace files are rewritten in place, not replaced: a kept container binds the
	// file (its inode) and must see the new content.
	InPlace bool `json:",omitempty"`
	// Parts are where Content came from (isolator.Mount.Parts), for the script.
	Parts []isolator.ContentPart `json:",omitempty"`
}

// ImageFile is a generated, non-secret file a Shipped layout puts in the image the
// backend derives from the user's (root's, mode 0444): it lands on the container's
// root file system, under no mount.
type ImageFile struct {
	Path    string
	Content []byte
	Parts   []isolator.ContentPart // where Content came from (isolator.Mount.Parts), for the script
}

// Layout is a Plan as a container sees it.
type Layout struct {
	Home    string // the in-container home
	User    string // "UID:GID"
	Workdir string
	// Network is "default" where traffic leaves the container (open; allowlist,
	// filtered by rules the backend applies), "none" otherwise.
	Network string
	Mounts  []Mount // in order; a backend sorts them by depth, stably
	Files   []HostFile
	// ImageFiles are what a Shipped layout's image carries besides the programs.
	ImageFiles []ImageFile
	// Contents, in a Shipped layout, are the generated files bound from
	// Options.ContentSource (Path is the target), which the backend makes on the
	// engine's side before it creates the container.
	Contents []ImageFile
	// Volatile, in a Shipped kept layout, are the session's Data bound from
	// Options.VolatileSource (Path is the target), which the backend writes in
	// place on the engine's side before the session's command starts.
	Volatile []ImageFile
	// Hosts, in a Shipped one-shot layout, are the names resolved at launch as
	// "NAME:ADDRESS", for the engine's own /etc/hosts (instead of a bound file).
	Hosts []string
	// Masks are the setting behind each mask (the in-container path's Plan Mount
	// Why, "sandbox.hide_paths"), for the message when the init finds one not in
	// effect.
	Masks map[string]string
	// Manifest is what the container's init verifies; Session is what the init of
	// each session's exec verifies in a kept container (nil without Keep).
	Manifest *wire.Manifest
	Session  *wire.Manifest
	// Env is the command's environment (FromHost values are printed as names);
	// Secrets travel in the Hello frame, never in the spec.
	Env     []isolator.EnvVar
	Secrets []isolator.Secret
	// Init is the init's arguments (after InitPath) as the container's command:
	// the run's own, or with Keep the keeper's. SessionCmd is the exec's whole
	// argv with Keep, and SessionEnv what the exec's environment adds to Env for
	// the session's init alone, which removes it (wire.UnsetGOMAXPROCSArg).
	Init, SessionCmd []string
	SessionEnv       []string
	// Labels are the labels every backend puts on the container.
	Labels map[string]string
	// Dirs are host directories Prepare creates (0700) before they are bound;
	// EmptyFile is the empty host file masks are bound from ("" with Shipped).
	Dirs      []string
	EmptyFile string
	TTY       bool

	filesDir string
}

// Lay computes p's container layout. It is pure: host paths come from the Plan and o,
// nothing is read or written.
func Lay(p *isolator.Plan, o Options, version string) (*Layout, error) {
	if err := endpointsOK(p, o); err != nil {
		return nil, err
	}
	uid, gid := p.User.InContainer()
	l := &Layout{Home: o.Home, User: fmt.Sprintf("%d:%d", uid, gid), Workdir: p.Workdir, Network: "none",
		Dirs: p.PrivateDirs, EmptyFile: p.EmptyFile, TTY: p.TTY, filesDir: o.FilesDir}
	if l.Home == "" {
		l.Home = "/home/" + p.User.Name
	}
	if err := homesApart(p, l.Home); err != nil {
		return nil, err
	}
	if o.Shipped {
		l.EmptyFile = "" // masks bind MaskSource
	}
	if p.Egress.Mode == egress.Open || p.Egress.Mode == egress.Allowlist {
		l.Network = "default"
	}
	man := manifest(p, o)
	man.ContainerRoot = p.User.ContainerRoot
	l.Manifest = man
	owned := Tmpfs{Mode: "0700", Owned: true}
	l.Mounts = []Mount{{Type: Scratch, Target: "/tmp", Tmpfs: Tmpfs{Mode: "1777", Exec: true, Size: p.Tmp.Size, Owned: o.OwnTmp}}}
	if o.OwnTmp {
		man.Sticky = []string{"/tmp"}
	}
	if !o.Shipped {
		// A shipped image holds devsandbox's files in /run/devsandbox.
		l.Mounts = append(l.Mounts, Mount{Type: Scratch, Target: "/run", Tmpfs: Tmpfs{Mode: "755"}})
	}
	l.Mounts = append(l.Mounts, Mount{Type: Scratch, Target: isolator.SecretDir, Tmpfs: Tmpfs{Mode: "0700", NoExec: true, Owned: true}})
	if o.AgentSocket != "" {
		// The carrier's (AgentCarrier), not the command's: the command can neither
		// remove the socket nor plant another.
		t := Tmpfs{Mode: "0755", NoExec: true}
		if cu, cg := AgentCarrier(p.User); cu != 0 {
			t.As = UIDGID(cu, cg)
		}
		l.Mounts = append(l.Mounts, Mount{Type: Scratch, Target: AgentDir, Tmpfs: t})
	}
	visible := isolator.VisibleMounts(p, l.Home)
	l.Masks = map[string]string{}
	for i, m := range visible {
		dst := m.Path
		if m.Kind == isolator.MaskFile || m.Kind == isolator.MaskDir {
			l.Masks[dst] = m.Why
		}
		switch m.Kind {
		case isolator.Bind:
			if m.Source == p.SandboxHome && dst == l.Home && o.HomeVolume != "" {
				l.Mounts = append(l.Mounts, Mount{Type: Volume, Source: o.HomeVolume, Target: dst})
				man.Checks = append(man.Checks, wire.Check{Kind: wire.CheckRW, Path: dst})
				continue
			}
			l.Mounts = append(l.Mounts, Mount{Type: Bind, Source: m.Source, Target: dst, ReadOnly: m.ReadOnly, Optional: m.Optional, Anchor: m.Anchor})
			kind := wire.CheckRW
			if m.ReadOnly {
				kind = wire.CheckRO
			}
			man.Checks = append(man.Checks, identify(wire.Check{Kind: kind, Path: dst}, m))
		case isolator.MaskFile:
			if o.Shipped {
				// Not this host's file: no identity to compare.
				l.Mounts = append(l.Mounts, Mount{Type: Bind, Source: o.MaskSource, Target: dst, ReadOnly: true})
				man.Checks = append(man.Checks, wire.Check{Kind: wire.CheckMaskFile, Path: dst, MayVanish: m.Optional})
				continue
			}
			l.Mounts = append(l.Mounts, Mount{Type: Bind, Source: p.EmptyFile, Target: dst, ReadOnly: true})
			man.Checks = append(man.Checks, identify(wire.Check{Kind: wire.CheckMaskFile, Path: dst, MayVanish: m.Optional}, m))
		case isolator.MaskDir:
			l.Mounts = append(l.Mounts, Mount{Type: MaskDir, Target: dst, ReadOnly: true})
			man.Checks = append(man.Checks, wire.Check{Kind: wire.CheckMaskDir, Path: dst, Allow: mountPointsIn(dst, visible[i+1:])})
		case isolator.TmpDir:
			l.Mounts = append(l.Mounts, Mount{Type: Scratch, Target: dst, Tmpfs: owned})
		case isolator.Data:
			if o.Shipped && !o.Keep && m.Volatile && dst == "/etc/hosts" {
				// The engine writes the container's /etc/hosts, with these names; it
				// is read-only on a read-only root.
				l.Hosts = hostsEntries(p.Egress)
				man.Checks = append(man.Checks, wire.Check{Kind: wire.CheckRO, Path: dst})
				continue
			}
			if o.Keep && m.Volatile && o.Shipped && o.VolatileSource != nil {
				l.Volatile = append(l.Volatile, ImageFile{Path: dst, Content: m.Content})
				l.Mounts = append(l.Mounts, Mount{Type: Bind, Source: o.VolatileSource(dst), Target: dst, ReadOnly: true})
				man.Checks = append(man.Checks, wire.Check{Kind: wire.CheckRO, Path: dst})
				continue
			}
			if o.Keep && m.Volatile {
				// Content that changes from session to session (a CDN's addresses
				// rotate): a kept container binds one file the session rewrites in
				// place, so its spec stays the same.
				sum := sha256.Sum256([]byte(dst))
				f := filepath.Join(o.FilesDir, "kept-"+hex.EncodeToString(sum[:8]))
				l.Files = append(l.Files, HostFile{Path: f, Content: m.Content, InPlace: true})
				l.Mounts = append(l.Mounts, Mount{Type: Bind, Source: f, Target: dst, ReadOnly: true})
				man.Checks = append(man.Checks, wire.Check{Kind: wire.CheckRO, Path: dst})
				continue
			}
			switch {
			case o.Shipped && !m.Volatile && onRoot(dst, visible):
				l.ImageFiles = append(l.ImageFiles, ImageFile{Path: dst, Content: m.Content, Parts: m.Parts})
			case o.Shipped && o.ContentSource != nil:
				l.Contents = append(l.Contents, ImageFile{Path: dst, Content: m.Content, Parts: m.Parts})
				l.Mounts = append(l.Mounts, Mount{Type: Bind, Source: o.ContentSource(m.Content), Target: dst, ReadOnly: true})
			default:
				l.Mounts = append(l.Mounts, Mount{Type: Bind, Source: l.fileFrom(m.Content, m.Parts), Target: dst, ReadOnly: true})
			}
			man.Checks = append(man.Checks, wire.Check{Kind: wire.CheckData, Path: dst, Size: int64(len(m.Content))})
		default:
			return nil, fmt.Errorf("mount %s: unknown kind %d", dst, m.Kind)
		}
	}
	if o.OwnHosts && !slices.ContainsFunc(visible, func(m isolator.PlacedMount) bool { return m.Path == "/etc/hosts" }) {
		l.loopbackHosts(o, man)
	}
	sessionPublish, proxySocket := l.egressEndpoints(p, o, man)
	cu := p.User
	cu.UID, cu.GID = p.User.InContainer()
	passwd, group := UserFiles(cu, l.Home)
	if o.Shipped {
		// The root file system is read-only, and the init is root's there.
		l.ImageFiles = append(l.ImageFiles, ImageFile{Path: "/etc/passwd", Content: passwd}, ImageFile{Path: "/etc/group", Content: group})
		if p.User.ContainerRoot {
			// The command is the container's root, the init's owner: what keeps it
			// from changing the init is the read-only root file system alone.
			man.Checks = append(man.Checks, wire.Check{Kind: wire.CheckRO, Path: InitPath})
		} else {
			man.Checks = append(man.Checks, wire.Check{Kind: wire.CheckSealed, Path: InitPath})
		}
	} else {
		initSrc := o.InitSource
		if initSrc == "" {
			initSrc = p.Self
		}
		l.Mounts = append(l.Mounts, Mount{Type: Bind, Source: initSrc, Target: InitPath, ReadOnly: true},
			Mount{Type: Bind, Source: l.File(passwd), Target: "/etc/passwd", ReadOnly: true},
			Mount{Type: Bind, Source: l.File(group), Target: "/etc/group", ReadOnly: true})
		man.Checks = append(man.Checks, wire.Check{Kind: wire.CheckRO, Path: InitPath})
	}
	man.Checks = append(man.Checks,
		wire.Check{Kind: wire.CheckData, Path: "/etc/passwd", Size: int64(len(passwd))},
		wire.Check{Kind: wire.CheckData, Path: "/etc/group", Size: int64(len(group))},
	)
	l.Env = Env(p, l.Home)
	if o.AgentSocket != "" {
		l.Env = agentEnv(l.Env, o.AgentSocket)
	}
	l.Secrets = append(l.Secrets, p.Secrets...)
	l.Labels = map[string]string{LabelProject: p.Project.ID, LabelName: p.Project.Name, LabelDir: p.Project.Dir, LabelVersion: version}
	l.Init = []string{initArg, "--framed", "--role=run", "--"}
	l.Init = append(l.Init, p.Command...)
	if o.Keep {
		// Sessions share the kept container only with the same egress policy. The
		// exec's init checks what the container's does, and serves this session's
		// published ports; the keeper serves the proxy endpoint.
		man.Policy = EgressPolicy(p.Egress)
		sm := *man
		sm.ForwardDir, sm.Policy, sm.Publish, sm.ProxySocket = "", "", sessionPublish, proxySocket
		l.Session = &sm
		l.Init = []string{initArg, "--framed", "--role=keeper"}
		l.SessionCmd = []string{InitPath, initArg, "--framed", "--role=session"}
		// The session's init starts its Go runtime with one P unless the command's
		// environment sets GOMAXPROCS (which the init must then pass on as it is).
		if !slices.ContainsFunc(l.Env, func(e isolator.EnvVar) bool { return e.Name == "GOMAXPROCS" }) {
			l.SessionCmd = append(l.SessionCmd, wire.UnsetGOMAXPROCSArg)
			l.SessionEnv = []string{wire.InitGOMAXPROCS}
		}
		l.SessionCmd = append(append(l.SessionCmd, "--"), p.Command...)
	}
	if o.AgentSocket != "" {
		// The session's init waits for its agent (the keeper's manifest is the kept
		// container's spec: it names no session's socket).
		if l.Session != nil {
			l.Session.Agent, l.Session.AgentBound, l.Session.AgentKey = o.AgentSocket, o.AgentBound, o.AgentKey
		} else {
			man.Agent, man.AgentBound, man.AgentKey = o.AgentSocket, o.AgentBound, o.AgentKey
		}
	}
	return l, nil
}

// hostsEntries are the lines of r.HostsFile as the engine's "NAME:ADDRESS".
func hostsEntries(r egress.Rules) []string {
	var out []string
	for _, line := range strings.Split(r.HostsFile(), "\n") {
		if addr, name, ok := strings.Cut(line, " "); ok {
			out = append(out, name+":"+addr)
		}
	}
	return out
}

// onRoot reports whether dst is on the container's root file system: under none of
// the other mounts (the home, the project, /tmp, the secrets' directory…).
func onRoot(dst string, visible []isolator.PlacedMount) bool {
	for _, d := range []string{"/tmp", isolator.SecretDir} {
		if isolator.Within(dst, d) {
			return false
		}
	}
	for _, m := range visible {
		if m.Path != dst && isolator.Within(dst, m.Path) {
			return false
		}
	}
	return true
}

// LoopbackHosts is the /etc/hosts of a container the engine writes none for
// (Options.OwnHosts): the loopback's names, as an engine writes them.
var LoopbackHosts = []byte("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")

// loopbackHosts gives l LoopbackHosts at /etc/hosts where the engine writes none
// (Options.OwnHosts), as a bind: an engine gives every container an empty
// /etc/hosts of its own above the image's.
func (l *Layout) loopbackHosts(o Options, man *wire.Manifest) {
	const dst = "/etc/hosts"
	if l.Network != "none" {
		return
	}
	src := ""
	if o.Shipped && o.ContentSource != nil {
		l.Contents = append(l.Contents, ImageFile{Path: dst, Content: LoopbackHosts})
		src = o.ContentSource(LoopbackHosts)
	} else {
		src = l.File(LoopbackHosts)
	}
	l.Mounts = append(l.Mounts, Mount{Type: Bind, Source: src, Target: dst, ReadOnly: true})
	man.Checks = append(man.Checks, wire.Check{Kind: wire.CheckData, Path: dst, Size: int64(len(LoopbackHosts))})
}

// manifest is the init's manifest before the mounts' checks.
func manifest(p *isolator.Plan, o Options) *wire.Manifest {
	// The init reports an out-of-memory kill after the run when it knows the limit.
	man := &wire.Manifest{SecretDir: isolator.SecretDir, Memory: p.Limits.Memory, BootID: o.BootID, Nproc: o.Nproc}
	if len(p.Command) == 1 && p.Command[0] == p.User.Shell && p.User.Shell != "/bin/sh" {
		man.ShellFallback = p.User.Shell
	}
	switch p.Egress.Mode {
	case egress.None, egress.Proxy:
		man.Network = "none"
	case egress.Allowlist:
		// The backend applies the rules from outside once the container runs; the
		// init checks they are in force before the command starts. With runc the
		// container's loopback is the network namespace the rules are in, so the
		// init sees the probe rule refuse its datagram. A microVM's guest has a
		// loopback of its own, where a probe proves nothing: there the backend
		// verifies the rules by reading them back.
		man.Network = "firewall"
		if !o.VM {
			man.EgressProbe = egress.ProbeAddr
		}
	}
	if o.VM {
		// In the VM the guest's statfs shows its virtio-fs mount's flags, not the
		// host binds': the init probes read-only-ness instead; out-of-memory kills are
		// the guest kernel's; and a seccomp profile for the runtime would filter the
		// VMM on the host, so the init loads the policy itself in the guest.
		man.ProbeReadOnly, man.OOMFromVMStat = true, true
		if !p.Syscalls.Unfiltered {
			pol := p.Syscalls
			man.Seccomp = &pol
		}
	}
	return man
}

// File registers a generated host file holding content and returns its path in the
// files directory (named by a hash of the content, registered once).
func (l *Layout) File(content []byte) string { return l.fileFrom(content, nil) }

// fileFrom is File for content that came from parts (isolator.Mount.Parts).
func (l *Layout) fileFrom(content []byte, parts []isolator.ContentPart) string {
	sum := sha256.Sum256(content)
	f := filepath.Join(l.filesDir, hex.EncodeToString(sum[:8]))
	if !slices.ContainsFunc(l.Files, func(h HostFile) bool { return h.Path == f }) {
		l.Files = append(l.Files, HostFile{Path: f, Content: content, Parts: parts})
	}
	return f
}

// HostFile returns a file of the files directory named name, not registered (for a
// backend's file that its CLI reads, not its engine).
func (l *Layout) HostFile(name string, content []byte) *HostFile {
	return &HostFile{Path: filepath.Join(l.filesDir, name), Content: content}
}

// EnvStrings is the command's environment as NAME=VALUE.
func (l *Layout) EnvStrings() []string {
	out := make([]string, 0, len(l.Env))
	for _, e := range l.Env {
		out = append(out, e.Name+"="+e.Value)
	}
	return out
}

// EgressPolicy is a digest of what decides where a kept container's traffic may go:
// part of its spec, so sessions with another policy never share it. Names resolved
// at launch are not part of it: the rules are re-applied when they change.
func EgressPolicy(r egress.Rules) string {
	b, _ := json.Marshal(struct {
		Mode                   egress.Mode
		Allow, Deny, ProxyOnly []egress.Entry
		Proxy                  string
	}{r.Mode, r.Allow, r.Deny, r.ProxyAllow, r.ProxyPolicy})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// mountPointsIn returns the names of dir's entries that later mounts create as their
// mount points.
func mountPointsIn(dir string, later []isolator.PlacedMount) []string {
	var names []string
	for _, m := range later {
		if m.Path == dir || !isolator.Within(m.Path, dir) {
			continue
		}
		n, _, _ := strings.Cut(strings.TrimPrefix(m.Path, dir+"/"), "/")
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// identify adds to c the identity of the file m mounts (isolator.Mount.ID), which the
// init compares with what it finds at the destination.
func identify(c wire.Check, m isolator.PlacedMount) wire.Check {
	if m.ID != nil {
		c.Dev, c.Ino = m.ID.Dev, m.ID.Ino
	}
	return c
}

// agentEnv is env with SSH_AUTH_SOCK at sock, where the container serves the
// session's agent (Options.AgentSocket).
func agentEnv(env []isolator.EnvVar, sock string) []isolator.EnvVar {
	env = slices.Clone(env)
	for i, e := range env {
		if e.Name == "SSH_AUTH_SOCK" {
			env[i] = isolator.EnvVar{Name: e.Name, Value: sock}
		}
	}
	return env
}

// Env is the command's environment: the Plan's, with the container's home and
// without PATH (containers use the image's); a tool's variable naming a location below
// the host home names it below the container's home, where its bindings land.
func Env(p *isolator.Plan, home string) []isolator.EnvVar {
	var env []isolator.EnvVar
	hasHome := false
	for _, e := range p.Env {
		switch e.Name {
		case "PATH":
			continue
		case "HOME":
			e = isolator.EnvVar{Name: "HOME", Value: home}
			hasHome = true
		default:
			if e.HomeRel != "" && home != p.User.HostHome {
				// Where the tool's bindings of the location land; not the host's value.
				e = isolator.EnvVar{Name: e.Name, Value: path.Join(home, e.HomeRel)}
			}
		}
		env = append(env, e)
	}
	if !hasHome {
		env = append(env, isolator.EnvVar{Name: "HOME", Value: home})
		sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	}
	return env
}

// UserFiles returns /etc/passwd and /etc/group for the container: root, nobody and
// the host user with the container's home, so git and ssh find a name and a home.
func UserFiles(u isolator.User, home string) (passwd, group []byte) {
	var pw, gr strings.Builder
	name := u.Name
	if name == "" {
		name = "user"
	}
	if u.UID != 0 {
		pw.WriteString("root:x:0:0:root:/root:/bin/sh\n")
	}
	if u.UID != 65534 {
		pw.WriteString("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
	}
	fmt.Fprintf(&pw, "%s:x:%d:%d:%s:%s:/bin/sh\n", name, u.UID, u.GID, name, home)
	if u.GID != 0 {
		gr.WriteString("root:x:0:\n")
	}
	if u.GID != 65534 {
		gr.WriteString("nogroup:x:65534:\n")
	}
	fmt.Fprintf(&gr, "%s:x:%d:\n", name, u.GID)
	return []byte(pw.String()), []byte(gr.String())
}

// SortMounts orders ms parents first, as engines apply them (stable within a depth,
// for the golden files); depth is target's.
func SortMounts[M any](ms []M, target func(M) string) []M {
	sort.SliceStable(ms, func(i, j int) bool {
		return strings.Count(target(ms[i]), "/") < strings.Count(target(ms[j]), "/")
	})
	return ms
}

// Options returns a Scratch mount's options as a list, uidgid being the ownership
// option of the engine ("U", or "uid=…,gid=…").
func (t Tmpfs) Options(uidgid string) []string {
	o := []string{"rw"}
	if t.Exec {
		o = append(o, "exec")
	}
	o = append(o, "nosuid", "nodev")
	if t.NoExec {
		o = append(o, "noexec")
	}
	o = append(o, "mode="+t.Mode)
	if t.Size > 0 {
		o = append(o, "size="+strconv.FormatInt(t.Size, 10))
	}
	switch {
	case t.As != "":
		o = append(o, t.As)
	case t.Owned:
		o = append(o, uidgid)
	}
	return o
}

// AgentCarrierID is the container uid and gid of the process that carries the ssh
// agent into a container whose command is its uid 0 (a rootless engine's, where it
// is one of the user's subordinate ids on the host: neither the user nor root).
const AgentCarrierID = 65534

// AgentCarrier is the container uid and gid that carries the ssh agent into a
// container whose command runs as u (the docker isolator's exec, its socket's
// directory AgentDir): root, without a capability, for a command of another uid;
// AgentCarrierID for a command that is the container's uid 0, which would own
// root's socket and process (it could replace the one, and signal, trace and
// write to the other). Either way not the command's: without CAP_KILL,
// CAP_SYS_PTRACE, CAP_DAC_OVERRIDE or CAP_FOWNER it can neither signal nor trace the
// carrier, nor open its descriptors or memory, nor write in its directory.
func AgentCarrier(u isolator.User) (uid, gid int) {
	if cu, _ := u.InContainer(); cu == 0 {
		return AgentCarrierID, AgentCarrierID
	}
	return 0, 0
}

// MaskOptions are the options of a MaskDir tmpfs, uidgid being the ownership option of
// the engine ("U", or UIDGID). The mask belongs to the sandbox user: runc gives a
// tmpfs mounted over a directory that directory's mode (0700 for ~/.ssh), whatever
// mode= says, and a root-owned mask of such a directory could not be listed, not even
// by the init that checks it is empty. Read-only, it is no more writable for its owner.
func MaskOptions(uidgid string) []string {
	return []string{"ro", "nosuid", "nodev", "noexec", "size=4k", "mode=755", uidgid}
}

// UIDGID is the tmpfs ownership option for uid and gid.
func UIDGID(uid, gid int) string { return "uid=" + strconv.Itoa(uid) + ",gid=" + strconv.Itoa(gid) }
