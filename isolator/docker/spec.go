package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/egress/netfilter"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/containerview"
	"github.com/devsandbox/devsandbox/isolator/shim/wire"
	"github.com/devsandbox/devsandbox/syscalls"
)

// InitPath is where devsandbox-init appears in every container; it is the entrypoint
// (the same path as isolator.ShimPath, where tools such as ssh's ProxyCommand expect it).
const InitPath = isolator.ShimPath

// ProxySocket is where the session proxy's Unix socket appears (egress proxy and
// allowlist, one-shot containers).
const ProxySocket = "/run/devsandbox/proxy.sock"

// PublishDir is where the session's publish directory appears (one-shot containers).
const PublishDir = "/run/devsandbox/publish"

// EndpointDir is where a kept container sees the project's socket directory
// (egress.Rules.SocketDir): the live sessions' proxy sockets and publish directories.
const EndpointDir = "/run/devsandbox/ep"

// Labels on everything the backend creates.
const (
	LabelProject = "dev.devsandbox.project" // project id
	LabelName    = "dev.devsandbox.name"    // <basename>-<id>
	LabelDir     = "dev.devsandbox.dir"     // the project's path on the host
	LabelVersion = "dev.devsandbox.version" // devsandbox version that created it
	LabelSpec    = "dev.devsandbox.spec"    // hash of the rendered spec (kept containers)
	LabelKept    = "dev.devsandbox.kept"    // "true" for keep_container containers
	// LabelUser is the uid of the user whose sandbox it is: list, remove and prune act
	// on the current user's only (an engine is often shared, its labels are not).
	LabelUser = "dev.devsandbox.uid"
)

// Options are the docker.* settings and what Run resolved about the engine. Render
// uses them as given; Run fills in InitSource and HomeVolume first.
type Options struct {
	Image   string // docker.image
	Home    string // docker.home: the in-container home
	Keep    bool   // docker.keep_container
	Version string // devsandbox version, a label and part of the spec hash

	// InitSource is the host path of the Linux devsandbox-init bound at InitPath;
	// empty means the Plan's Self.
	InitSource string
	// HomeVolume, when set, is the named volume that backs the home instead of a
	// bind of the Plan's SandboxHome (remote engines, Docker Desktop).
	HomeVolume string
	// BootID is the host's boot id (pin.BootID), set by Run for a local engine: the
	// init compares the identities of pinned mount sources only on that kernel.
	BootID string
}

// hostFile is a generated, non-secret file Run writes on the host before the
// container is created; its name is a hash of its content, so a kept container's spec
// does not change between sessions.
type hostFile struct {
	Path    string
	Content []byte
	// InPlace files are rewritten in place, not replaced: a kept container binds
	// the file (its inode) and must see the new content.
	InPlace bool `json:",omitempty"`
}

// Spec is a rendered docker run: the container to create, or with Keep the kept
// container plus the exec that runs the command in it.
type Spec struct {
	Name    string // container name
	Config  *container.Config
	Host    *container.HostConfig
	Network *network.NetworkingConfig
	// Exec runs the command in a kept container (nil without Keep).
	Exec *container.ExecOptions
	// Hash identifies Config+Host (a kept container is reused only with the same hash).
	Hash string
	// FirewallArg is the argument of devsandbox-init that applies the egress rules
	// (allowlist), run in a helper container in the container's network namespace.
	FirewallArg string

	Files []hostFile
	// Profile is the syscall policy as a seccomp profile file for the script's
	// --security-opt (the engine gets the profile itself in HostConfig.SecurityOpt).
	Profile *hostFile
	Policy  syscalls.Policy
	// Dirs are host directories Run creates (0700) before binding them; EmptyFile is
	// the empty file masks are bound from.
	Dirs      []string
	EmptyFile string
	// Optional lists bind sources that may vanish before launch: Run drops the mount
	// (and its check) when the source is gone, as bwrap's --ro-bind-try does.
	Optional map[string]bool
	// Secrets are delivered in the Hello frame at run time, never in the spec.
	Secrets []isolator.Secret
	// Env is the command's environment, for the script (values of FromHost variables
	// are printed as names).
	Env []isolator.EnvVar
	TTY bool
}

// containerConfig renders p for the engine. It is pure: host paths are taken from the
// Plan and opts, nothing is read or written.
func containerConfig(p *isolator.Plan, opts Options) (*Spec, error) {
	switch p.Egress.Mode {
	case egress.Open, egress.None:
	case egress.Proxy, egress.Allowlist:
		if p.Egress.Proxy.Unix == "" {
			return nil, fmt.Errorf("egress mode %s needs the session proxy's Unix socket", p.Egress.Mode)
		}
	default:
		return nil, fmt.Errorf("unknown egress mode %q", p.Egress.Mode)
	}
	if opts.Keep && p.Egress.SocketDir == "" && (p.Egress.NeedsProxy() || len(p.Egress.Forwards) > 0) {
		return nil, fmt.Errorf("a kept container needs the project's socket directory for its proxy endpoint and published ports")
	}
	if len(p.Egress.Forwards) > 0 && p.Egress.PublishDir == "" {
		return nil, fmt.Errorf("published ports need a publish directory")
	}
	if opts.Image == "" {
		return nil, fmt.Errorf("docker.image is empty")
	}
	home := opts.Home
	if home == "" {
		home = "/home/" + p.User.Name
	}
	initSrc := opts.InitSource
	if initSrc == "" {
		initSrc = p.Self
	}
	s := &Spec{Optional: map[string]bool{}, TTY: p.TTY, Dirs: p.PrivateDirs, EmptyFile: p.EmptyFile}
	filesDir := filepath.Join(p.StateDir, "docker")
	file := func(content []byte) string {
		sum := sha256.Sum256(content)
		f := filepath.Join(filesDir, hex.EncodeToString(sum[:8]))
		for _, h := range s.Files {
			if h.Path == f {
				return f
			}
		}
		s.Files = append(s.Files, hostFile{Path: f, Content: content})
		return f
	}
	// The init reports an out-of-memory kill after the run when it knows the limit.
	man := &wire.Manifest{SecretDir: isolator.SecretDir, Memory: p.Limits.Memory, BootID: opts.BootID}
	if len(p.Command) == 1 && p.Command[0] == p.User.Shell && p.User.Shell != "/bin/sh" {
		man.ShellFallback = p.User.Shell
	}
	switch p.Egress.Mode {
	case egress.None, egress.Proxy:
		man.Network = "none"
	case egress.Allowlist:
		// The rules are applied from outside once the container runs (firewall.go);
		// the init checks they are in force before the command starts.
		man.Network = "firewall"
		man.EgressProbe = egress.ProbeAddr
		fw, err := egress.Compile(p.Egress)
		if err != nil {
			return nil, err
		}
		arg, err := netfilter.EncodeArg(fw)
		if err != nil {
			return nil, err
		}
		s.FirewallArg = arg
	}

	var mounts []mount.Mount
	tmpfs := map[string]string{
		"/tmp":             "rw,exec,nosuid,nodev,mode=1777",
		"/run":             "rw,nosuid,nodev,mode=755",
		isolator.SecretDir: fmt.Sprintf("rw,nosuid,nodev,noexec,mode=0700,uid=%d,gid=%d", p.User.UID, p.User.GID),
	}
	visible := containerview.VisibleMounts(p, home)
	for i, m := range visible {
		dst := m.Path
		switch m.Kind {
		case isolator.Bind:
			src := m.Source
			if m.Source == p.SandboxHome && dst == home && opts.HomeVolume != "" {
				mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: opts.HomeVolume, Target: dst})
				man.Checks = append(man.Checks, wire.Check{Kind: wire.CheckRW, Path: dst})
				continue
			}
			mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: src, Target: dst, ReadOnly: m.ReadOnly})
			if m.Optional {
				s.Optional[src] = true
			}
			kind := wire.CheckRW
			if m.ReadOnly {
				kind = wire.CheckRO
			}
			man.Checks = append(man.Checks, containerview.Identify(wire.Check{Kind: kind, Path: dst}, m))
		case isolator.MaskFile:
			mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: p.EmptyFile, Target: dst, ReadOnly: true})
			man.Checks = append(man.Checks, containerview.Identify(wire.Check{Kind: wire.CheckMaskFile, Path: dst}, m))
		case isolator.MaskDir:
			mounts = append(mounts, mount.Mount{Type: mount.TypeTmpfs, Target: dst, ReadOnly: true, TmpfsOptions: &mount.TmpfsOptions{SizeBytes: 4096, Mode: 0o755}})
			man.Checks = append(man.Checks, wire.Check{Kind: wire.CheckMaskDir, Path: dst, Allow: containerview.MountPointsIn(dst, visible[i+1:])})
		case isolator.TmpDir:
			tmpfs[dst] = fmt.Sprintf("rw,nosuid,nodev,mode=0700,uid=%d,gid=%d", p.User.UID, p.User.GID)
		case isolator.Data:
			if opts.Keep && m.Volatile {
				// Content that changes from session to session (a CDN's addresses
				// rotate): a kept container binds one file the session rewrites in
				// place, so its spec stays the same.
				sum := sha256.Sum256([]byte(dst))
				f := filepath.Join(filesDir, "kept-"+hex.EncodeToString(sum[:8]))
				s.Files = append(s.Files, hostFile{Path: f, Content: m.Content, InPlace: true})
				mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: f, Target: dst, ReadOnly: true})
				man.Checks = append(man.Checks, wire.Check{Kind: wire.CheckRO, Path: dst})
				continue
			}
			mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: file(m.Content), Target: dst, ReadOnly: true})
			man.Checks = append(man.Checks, wire.Check{Kind: wire.CheckData, Path: dst, Size: int64(len(m.Content))})
		default:
			return nil, fmt.Errorf("mount %s: unknown kind %d", dst, m.Kind)
		}
	}
	// The session proxy: a one-shot container binds the session's socket and its
	// init forwards SandboxProxyAddr to it, as bwrap's shim does. A kept container
	// outlives sessions: it binds the project's socket directory, and its keeper
	// forwards SandboxProxyAddr to whichever session's proxy is live there (every
	// session attached has the same egress configuration: it is part of the spec).
	// Published ports are served the same way, from the session's directory.
	var sessionPublish []string
	switch {
	case opts.Keep && p.Egress.SocketDir != "":
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: p.Egress.SocketDir, Target: EndpointDir})
		if p.Egress.NeedsProxy() {
			man.ForwardDir = egress.SandboxProxyAddr + "=" + EndpointDir
		}
		for _, f := range p.Egress.Forwards {
			sessionPublish = append(sessionPublish, fmt.Sprintf("%d=%s/%s/%d.sock", f.SandboxPort, EndpointDir, filepath.Base(p.Egress.PublishDir), f.SandboxPort))
		}
	case p.Egress.NeedsProxy():
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: p.Egress.Proxy.Unix, Target: ProxySocket})
		man.Forward = egress.SandboxProxyAddr + "=" + ProxySocket
	}
	if !opts.Keep && len(p.Egress.Forwards) > 0 {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: p.Egress.PublishDir, Target: PublishDir})
		for _, f := range p.Egress.Forwards {
			man.Publish = append(man.Publish, fmt.Sprintf("%d=%s/%d.sock", f.SandboxPort, PublishDir, f.SandboxPort))
		}
	}
	if opts.Keep {
		// Sessions share the kept container only with the same egress policy.
		man.Policy = egressPolicy(p.Egress)
	}
	passwd, group := containerview.UserFiles(p.User, home)
	mounts = append(mounts,
		mount.Mount{Type: mount.TypeBind, Source: initSrc, Target: InitPath, ReadOnly: true},
		mount.Mount{Type: mount.TypeBind, Source: file(passwd), Target: "/etc/passwd", ReadOnly: true},
		mount.Mount{Type: mount.TypeBind, Source: file(group), Target: "/etc/group", ReadOnly: true},
	)
	man.Checks = append(man.Checks,
		wire.Check{Kind: wire.CheckRO, Path: InitPath},
		wire.Check{Kind: wire.CheckData, Path: "/etc/passwd", Size: int64(len(passwd))},
		wire.Check{Kind: wire.CheckData, Path: "/etc/group", Size: int64(len(group))},
	)

	env := containerview.Env(p, home)
	s.Env = env
	s.Secrets = append(s.Secrets, p.Secrets...)
	user := fmt.Sprintf("%d:%d", p.User.UID, p.User.GID)
	labels := map[string]string{
		LabelProject: p.Project.ID,
		LabelName:    p.Project.Name,
		LabelDir:     p.Project.Dir,
		LabelVersion: opts.Version,
		LabelKept:    fmt.Sprint(opts.Keep),
		LabelUser:    fmt.Sprint(p.User.UID),
	}
	cfg := &container.Config{
		Hostname:   "devsandbox",
		User:       user,
		Image:      opts.Image,
		WorkingDir: p.Workdir,
		Entrypoint: []string{InitPath},
		Labels:     labels,
		Env:        []string{wire.ManifestEnv + "=" + man.Encode()},
	}
	hc := &container.HostConfig{
		NetworkMode:    container.NetworkMode(networkMode(p.Egress.Mode)),
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		Mounts:         sortMounts(mounts),
		Tmpfs:          tmpfs,
	}
	s.Policy = p.Syscalls
	if !p.Syscalls.Unfiltered {
		profile := syscalls.OCIJSON(syscalls.Compile(p.Syscalls))
		hc.SecurityOpt = append(hc.SecurityOpt, "seccomp="+string(profile))
		sum := sha256.Sum256(profile)
		s.Profile = &hostFile{Path: filepath.Join(filesDir, "seccomp-"+hex.EncodeToString(sum[:8])+".json"), Content: profile}
	}
	applyLimits(hc, p.Limits)
	cmd := append([]string{shimContainerArg, "--framed"}, "--role=")
	if opts.Keep {
		cmd[2] += "keeper"
		// The exec's init checks what the container's does, and serves this
		// session's published ports; the keeper serves the proxy endpoint.
		sm := *man
		sm.ForwardDir, sm.Policy, sm.Publish = "", "", sessionPublish
		cfg.Cmd = cmd
		cfg.WorkingDir = p.Project.Dir // the exec has the run's own
		s.Exec = &container.ExecOptions{
			User:         user,
			AttachStdin:  true,
			AttachStdout: true,
			AttachStderr: true,
			WorkingDir:   p.Workdir,
			Env:          append(envStrings(env), wire.ManifestEnv+"="+sm.Encode()),
			Cmd:          append([]string{InitPath, shimContainerArg, "--framed", "--role=session", "--"}, p.Command...),
		}
	} else {
		cmd[2] += "run"
		cfg.Cmd = append(append(cmd, "--"), p.Command...)
		cfg.Env = append(envStrings(env), cfg.Env...)
		cfg.AttachStdin, cfg.AttachStdout, cfg.AttachStderr = true, true, true
		cfg.OpenStdin, cfg.StdinOnce = true, true
		hc.AutoRemove = true
	}
	s.Config, s.Host, s.Network = cfg, hc, &network.NetworkingConfig{}
	s.Hash = specHash(cfg, hc)
	if opts.Keep {
		labels[LabelSpec] = s.Hash
		s.Name = "devsandbox-" + p.Project.Name
	}
	return s, nil
}

// applyLimits sets the engine's cgroup limits: tasks, memory (without swap, so a
// hog is killed rather than swapped out) and CPU time.
func applyLimits(hc *container.HostConfig, l isolator.Limits) {
	if l.Pids > 0 {
		n := int64(l.Pids)
		hc.PidsLimit = &n
	}
	if l.Memory > 0 {
		hc.Memory, hc.MemorySwap = l.Memory, l.Memory
	}
	if l.CPUs > 0 {
		hc.NanoCPUs = int64(l.CPUs * 1e9)
	}
}

// egressPolicy is a digest of what decides where a kept container's traffic may go:
// part of its spec, so sessions with another policy never share it. Names resolved
// at launch are not part of it: the rules are re-applied when they change.
func egressPolicy(r egress.Rules) string {
	b, _ := json.Marshal(struct {
		Mode                   egress.Mode
		Allow, Deny, ProxyOnly []egress.Entry
		Proxy                  string
	}{r.Mode, r.Allow, r.Deny, r.ProxyAllow, r.ProxyPolicy})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// shimContainerArg is shim.ContainerArg (not imported: the shim package is Linux-only).
const shimContainerArg = "--container"

// networkMode is the container's network: the engine's default bridge where traffic
// leaves the container (open, and allowlist, filtered by the rules in the container's
// own namespace: nothing in or out but what they allow, other containers on the
// bridge included), none otherwise. Not a network of its own for allowlist: a
// user-defined network brings the engine's DNS resolver on 127.0.0.11, which would
// answer through the daemon, outside the rules.
func networkMode(m egress.Mode) string {
	switch m {
	case egress.Open, egress.Allowlist:
		return "default"
	}
	return "none"
}

// specHash is a short hash of what the container is made of, labels aside.
func specHash(cfg *container.Config, hc *container.HostConfig) string {
	c := *cfg
	c.Labels = nil
	b, _ := json.Marshal(struct {
		C *container.Config
		H *container.HostConfig
		V string
	}{&c, hc, cfg.Labels[LabelVersion]})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// sortMounts orders mounts parents first, as the engine applies them (stable within
// a depth, for the golden files).
func sortMounts(ms []mount.Mount) []mount.Mount {
	sort.SliceStable(ms, func(i, j int) bool {
		return strings.Count(ms[i].Target, "/") < strings.Count(ms[j].Target, "/")
	})
	return ms
}

func envStrings(env []isolator.EnvVar) []string {
	out := make([]string, 0, len(env))
	for _, e := range env {
		out = append(out, e.Name+"="+e.Value)
	}
	return out
}
