package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/egress/netfilter"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/diskguard"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
	"github.com/devsandbox/devsandbox/syscalls"
)

// Where devsandbox's own files appear in every container (see package container).
const (
	InitPath    = container.InitPath
	ProxySocket = container.ProxySocket
	PublishDir  = container.PublishDir
	EndpointDir = container.EndpointDir
	ShipDir     = container.ShipDir
)

// Labels on everything the backend creates.
const (
	LabelProject = container.LabelProject
	LabelName    = container.LabelName
	LabelDir     = container.LabelDir
	LabelVersion = container.LabelVersion
	LabelSpec    = "dev.devsandbox.spec" // hash of the rendered spec (kept containers)
	LabelKept    = "dev.devsandbox.kept" // "true" for keep_container containers
	// LabelUser is the uid of the user whose sandbox it is: list, remove and prune act
	// on the current user's only (an engine is often shared, its labels are not).
	LabelUser = "dev.devsandbox.uid"
	// LabelAnchor is, on an anchor's anonymous volume, the host directory it shows.
	LabelAnchor = "dev.devsandbox.anchor"
)

// Options are the docker.* settings and what Run resolved about the engine. Render
// uses them as given (the init bound from the host, as a hand-run `docker run` can);
// Run ships the init and sets the endpoint volume and HomeVolume first.
type Options struct {
	Image string // docker.image
	// ImageEnv is the image's ENV (Run reads it from the engine; none for
	// --dry-run): the variables every container's config names to remove them
	// (imageenv.go), given back to the command by the init.
	ImageEnv []string
	Home     string // docker.home: the in-container home
	Keep     bool   // docker.keep_container
	Version  string // devsandbox version, a label and part of the spec hash
	// BindAgent is docker.agent_bind: Run asks a local engine to bind the ssh
	// agent relay's socket (agent.go, AgentBind below) rather than carry the agent
	// over the Engine API as on every other engine. Off by default: the bind is a
	// host socket in the container, a departure from DESIGN guarantee 11.
	BindAgent bool

	// InitSource is the host path of the Linux devsandbox-init bound at InitPath;
	// empty means the Plan's Self.
	InitSource string
	// HomeVolume, when set, is the named volume that backs the home instead of a
	// bind of the Plan's SandboxHome (remote engines, Docker Desktop).
	HomeVolume string
	// BootID is the host's boot id (pin.BootID), set by Run for a local engine: the
	// init compares the identities of pinned mount sources only on that kernel.
	BootID string
	// Shipped, EndpointVolume and MaskSource: see container.Options. Run sets them:
	// the init is in the derived image, the egress services run in the engine, file
	// masks bind an empty file of the engine's.
	Shipped        bool
	EndpointVolume string
	MaskSource     string
	// ContentSources are the engine-side paths of the content volumes' files by
	// volume name (contentvol.go), as the engine reported them; a volume not in it is
	// where a local engine keeps it.
	ContentSources map[string]string
	// Anchors are, by source path, what the engine mounts for each anchor that is a
	// directory (a bind whose source a sandbox can swap for a symlink,
	// container.Mount.Anchor; Run delivers a file as its content, viaContent) on an
	// engine older than SubpathAPI: the /proc/PID/fd/N path of the directory Run
	// pinned, which the engine's local volume driver mounts in the engine's mount
	// namespace (a bind source given as a path would be resolved anew, after a
	// concurrent session swapped it for a link). Run sets it (empty when nothing is
	// pinned, so that an anchor left is refused) unless Subpath.
	Anchors map[string]string
	// Subpath mounts each anchor as a sub-path of its top directory's volume instead
	// (anchorvol.go): Run sets it for an engine with API SubpathAPI or newer.
	// Neither Subpath nor Anchors renders each anchor as a bind of its path, named in
	// the script's comment (--dry-run), which a launch never does.
	Subpath bool
	// AgentSocket is where the container serves the session's ssh agent, which an
	// exec carries over the Engine API (agent.go); "" without an agent.
	AgentSocket string
	// AgentBind, with AgentSocket, is the host's path of the session's relay socket
	// (one-shot) or of the kept container's relays' directory (Keep) that the
	// engine binds read-only at AgentBindTarget; AgentBound is the relay's socket as
	// the container sees it, which its init tries before it asks for the stream
	// (agent.go), with the relay's probe key AgentKey. Run sets them for a local
	// engine.
	AgentBind, AgentBindTarget, AgentBound string
	AgentKey                               []byte
}

// Spec is a rendered docker run: the container to create, or with Keep the kept
// container plus the exec that runs the command in it.
type Spec struct {
	// Reserve is the disk reserve's comment (diskguard.Script), for Script.
	Reserve string
	Name    string // container name
	Config  *dockercontainer.Config
	Host    *dockercontainer.HostConfig
	Network *network.NetworkingConfig
	// Exec runs the command in a kept container (nil without Keep).
	Exec *dockercontainer.ExecOptions
	// ImageEnv is the image's ENV (Options.ImageEnv), which the helper
	// containers' configs remove too (imageenv.go).
	ImageEnv []string
	// Hash identifies Config+Host (a kept container is reused only with the same hash).
	Hash string
	// AgentSocket is where an exec serves the session's ssh agent (agent.go), or "".
	AgentSocket string
	agentUser   isolator.User // the command's, for the exec's user (agentExec)
	// AgentBind is the host path bound for the agent (Options.AgentBind), or "":
	// the init then asks for the stream (agent.go).
	AgentBind string
	// AgentBindOn is docker.agent_bind (Options.BindAgent): a kept container that
	// binds the agent's relays is reused only while it is on (reusable).
	AgentBindOn bool
	// agentVerdict, set by Run, records an engine's refusal of AgentBind
	// (agentVerdict.note).
	agentVerdict *agentVerdict
	// engineHostAhead gives a remote engine's host's addresses, read once
	// (engineHostAddresses, perhaps still being read), for the companion to refuse;
	// nil for a local engine.
	engineHostAhead func() ([]string, error)
	// FirewallArg is the argument of devsandbox-init that applies the egress rules
	// (allowlist), run in a helper container in the container's network namespace.
	FirewallArg string
	// Layout is what the spec was translated from: the host files, secrets and
	// environment the script names.
	Layout *container.Layout
	// Profile is the syscall policy as a seccomp profile file for the script's
	// --security-opt (the engine gets the profile itself in HostConfig.SecurityOpt).
	Profile *container.HostFile
	Policy  syscalls.Policy
	// InitHost is this host's devsandbox-init and MaskSource the engine's mask file,
	// for the script, which makes the derived image and the mask volume by hand.
	InitHost, MaskSource string
	// Anchored: the container mounts pinned directories (Options.Anchors), valid
	// only while this process holds their descriptors: the container cannot be
	// started again later.
	Anchored bool
	// AnchorRoots are the volumes the anchors are sub-paths of (Options.Subpath),
	// which Run creates before the container.
	AnchorRoots []anchorRoot
	// ByPath are the anchors a render with neither Options.Subpath nor
	// Options.Anchors (--dry-run) binds by path, which a launch never does.
	ByPath []string
}

// containerConfig renders p for the engine. It is pure: host paths are taken from the
// Plan and opts, nothing is read or written.
func containerConfig(p *isolator.Plan, opts Options) (*Spec, error) {
	p = agentless(p) // the container serves the agent (agent.go)
	l, err := layout(p, opts)
	if err != nil {
		return nil, err
	}
	return translate(p, l, opts)
}

// layout is p's container layout with opts.
func layout(p *isolator.Plan, opts Options) (*container.Layout, error) {
	o := container.Options{Home: opts.Home, InitSource: opts.InitSource, FilesDir: filepath.Join(p.StateDir, "docker"),
		BootID: opts.BootID, Keep: opts.Keep, HomeVolume: opts.HomeVolume, Shipped: opts.Shipped, EndpointVolume: opts.EndpointVolume, MaskSource: opts.MaskSource,
		AgentSocket: opts.AgentSocket, AgentBound: opts.AgentBound, AgentKey: opts.AgentKey, OwnHosts: true}
	if opts.Shipped {
		o.ContentSource = contentSource(p, opts)
		if opts.Keep {
			o.VolatileSource = volatileSource(p, opts)
		}
	}
	l, err := container.Lay(p, o, opts.Version)
	if err != nil {
		return nil, err
	}
	if opts.Image == "" {
		return nil, fmt.Errorf("docker.image is empty")
	}
	return l, nil
}

// translate renders the layout l of p as the engine's container config. Pure.
func translate(p *isolator.Plan, l *container.Layout, opts Options) (*Spec, error) {
	s := &Spec{Reserve: diskguard.Script(p), Layout: l, Policy: p.Syscalls, InitHost: p.Self, MaskSource: opts.MaskSource, AgentSocket: opts.AgentSocket, agentUser: p.User, AgentBindOn: opts.BindAgent}
	if opts.InitSource != "" {
		s.InitHost = opts.InitSource
	}
	if p.Egress.NeedsFirewall() {
		// The rules are applied from outside once the container runs (firewall.go).
		fw, err := egress.Compile(p.Egress)
		if err != nil {
			return nil, err
		}
		if s.FirewallArg, err = netfilter.EncodeArg(fw); err != nil {
			return nil, err
		}
	}
	if len(l.Volatile) > 0 && s.FirewallArg == "" {
		// The firewall helper is what rewrites them per session.
		return nil, fmt.Errorf("%w: a kept container's per-session files need the egress allowlist's helper", isolator.ErrProtection)
	}
	var mounts, hashed []mount.Mount // hashed: anchors, pinned ones by their source path, not this process's descriptors
	tmpfs := map[string]string{}
	uid, gid := p.User.InContainer()
	for _, m := range l.Mounts {
		switch m.Type {
		case container.Bind:
			if m.Anchor && opts.Subpath {
				mm, err := s.subpathAnchor(p, m)
				if err != nil {
					return nil, err
				}
				mounts = append(mounts, mm)
				hashed = append(hashed, mm)
				continue
			}
			if m.Anchor {
				dev, ok := opts.Anchors[m.Source]
				if !ok && opts.Anchors != nil {
					return nil, fmt.Errorf("%w: the directory %s, which a sandbox can swap for a symlink, was not pinned", isolator.ErrProtection, m.Source)
				}
				hashed = append(hashed, anchorMount(m, m.Source))
				if !ok {
					// --dry-run: the script, run by hand, binds the path (Script says
					// what a launch does instead).
					mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
					s.ByPath = append(s.ByPath, m.Source)
					continue
				}
				mounts = append(mounts, anchorMount(m, dev))
				s.Anchored = true
				continue
			}
			mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
		case container.Volume:
			mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: m.Source, Target: m.Target})
		case container.MaskDir:
			// In Tmpfs, not Mounts: engines before API 1.46 set no owner on a tmpfs
			// mount.
			tmpfs[m.Target] = strings.Join(container.MaskOptions(container.UIDGID(uid, gid)), ",")
		case container.Scratch:
			tmpfs[m.Target] = strings.Join(m.Tmpfs.Options(container.UIDGID(uid, gid)), ",")
		}
	}
	labels := ownLabels(maps.Clone(l.Labels))
	labels[LabelKept] = fmt.Sprint(opts.Keep)
	labels[LabelUser] = fmt.Sprint(p.User.UID)
	cfg := &dockercontainer.Config{
		Hostname:    "devsandbox",
		User:        l.User,
		Image:       opts.Image,
		WorkingDir:  l.Workdir,
		Entrypoint:  []string{InitPath},
		Labels:      labels,
		Cmd:         l.Init,
		Healthcheck: noHealthcheck(),
		// No network, no network hook: the engine runs libnetwork's setkey hook,
		// its own binary re-executed, at the start of every container with a
		// network, "none" included (about 240 ms a start here). runc still gives
		// the container a network namespace of its own, with its loopback up;
		// the engine then writes no /etc/hosts nor /etc/resolv.conf
		// (Options.OwnHosts gives the first; there is no DNS to name without a
		// network).
		NetworkDisabled: l.Network == "none",
	}
	hc := &dockercontainer.HostConfig{
		NetworkMode:    dockercontainer.NetworkMode(l.Network),
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		Mounts:         container.SortMounts(mounts, func(m mount.Mount) string { return m.Target }),
		Tmpfs:          tmpfs,
		ExtraHosts:     l.Hosts,
	}
	if !p.Syscalls.Unfiltered {
		profile := syscalls.Profile(p.Syscalls)
		hc.SecurityOpt = append(hc.SecurityOpt, "seccomp="+string(profile))
		sum := sha256.Sum256(profile)
		s.Profile = l.HostFile("seccomp-"+hex.EncodeToString(sum[:8])+".json", profile)
	}
	applyLimits(hc, p.Limits)
	// The image's ENV reaches the container's programs only through the init, which
	// gives the command what the run does not set itself (imageenv.go).
	s.ImageEnv = opts.ImageEnv
	// Its PATH stays (the command's, and a `docker exec` into a kept container
	// finds its programs on it): no Go program reads it at its start.
	unset := slices.DeleteFunc(slices.Clone(opts.ImageEnv), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	manifestEnv := func(m wire.Manifest, env []string) string {
		m.ImageEnv = imageEnvFor(opts.ImageEnv, append(slices.Clone(env), wire.ManifestEnv+"="))
		return wire.ManifestEnv + "=" + m.Encode()
	}
	if opts.Keep {
		cfg.WorkingDir = p.Project.Dir // the exec has the run's own
		cfg.Env = unsetImageEnv(unset, []string{wire.ManifestEnv + "=" + l.Manifest.Encode()})
		s.Exec = &dockercontainer.ExecOptions{
			User:         l.User,
			AttachStdin:  true,
			AttachStdout: true,
			AttachStderr: true,
			WorkingDir:   l.Workdir,
			Env:          slices.Concat(l.EnvStrings(), l.SessionEnv, []string{manifestEnv(*l.Session, l.EnvStrings())}),
			Cmd:          l.SessionCmd,
		}
	} else {
		cfg.Env = unsetImageEnv(unset, append(l.EnvStrings(), manifestEnv(*l.Manifest, l.EnvStrings())))
		cfg.AttachStdin, cfg.AttachStdout, cfg.AttachStderr = true, true, true
		cfg.OpenStdin, cfg.StdinOnce = true, true
		hc.AutoRemove = true
	}
	s.Config, s.Host, s.Network = cfg, hc, &network.NetworkingConfig{}
	hhc := *hc
	hhc.Mounts = container.SortMounts(append(slices.DeleteFunc(slices.Clone(mounts), func(m mount.Mount) bool {
		return (m.VolumeOptions != nil && m.VolumeOptions.DriverConfig != nil) || (m.Type == mount.TypeBind && slices.Contains(s.ByPath, m.Source) && m.Source == m.Target)
	}), hashed...), func(m mount.Mount) string { return m.Target })
	s.Hash = specHash(cfg, &hhc)
	if opts.AgentBind != "" && opts.AgentSocket != "" {
		// Not in the hash: a kept container stays when the socket directory moves,
		// and each session proves the bind anew (agent.go). That the container binds
		// the relays at all counts, while the key is off (reusable).
		hc.Mounts = container.SortMounts(append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: opts.AgentBind, Target: opts.AgentBindTarget, ReadOnly: true}),
			func(m mount.Mount) string { return m.Target })
		s.AgentBind = opts.AgentBind
	}
	if opts.Keep {
		labels[LabelSpec] = s.Hash
		s.Name = keptName(p)
	}
	return s, nil
}

// subpathAnchor mounts the anchor m as the sub-path of its top directory's volume,
// which it adds to s.AnchorRoots.
func (s *Spec) subpathAnchor(p *isolator.Plan, m container.Mount) (mount.Mount, error) {
	top := topDir(p, m.Source)
	if top == "" {
		return mount.Mount{}, fmt.Errorf("%w: the directory %s, which a sandbox can swap for a symlink, lies in no directory the sandbox can write", isolator.ErrProtection, m.Source)
	}
	r := anchorRoot{Dir: top, Volume: anchorVolumeName(p, top)}
	if !slices.Contains(s.AnchorRoots, r) {
		s.AnchorRoots = append(s.AnchorRoots, r)
	}
	return subpathMount(p, m, r)
}

// anchorMount mounts the directory dev names at m.Target through an anonymous volume
// of the engine's local driver: the engine bind-mounts dev in its own mount
// namespace, where /proc/PID/fd/N reaches the directory devsandbox pinned (a bind
// mount's source is resolved again, by path, in the runtime's), and the runtime then
// binds the volume's directory, root's, which no sandbox can swap. NoCopy: the
// image's files at the target are never copied into the project.
//
// A read-only anchor is made read-only by the driver's own mount (o=bind,ro; the
// runtime's bind of it keeps the flag): an engine refuses ReadOnly on an anonymous
// volume.
func anchorMount(m container.Mount, dev string) mount.Mount {
	o := "bind"
	if m.ReadOnly {
		o = "bind,ro"
	}
	return mount.Mount{Type: mount.TypeVolume, Target: m.Target, VolumeOptions: &mount.VolumeOptions{
		NoCopy:       true,
		Labels:       map[string]string{LabelAnchor: m.Source},
		DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{"type": "none", "o": o, "device": dev}},
	}}
}

// keptName is the name of p's kept container.
func keptName(p *isolator.Plan) string { return keptNameOf(p.Project.Name) }

// keptNameOf is the kept container's name for the project named project.
func keptNameOf(project string) string { return "devsandbox-" + project }

// applyLimits sets the engine's cgroup limits: tasks, memory (without swap, so a
// hog is killed rather than swapped out) and CPU time.
func applyLimits(hc *dockercontainer.HostConfig, l isolator.Limits) {
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

// warmEncoders has encoding/json build its encoders for the types a run renders
// and sends as JSON (the spec's hash, the init's manifests, the exec's creation;
// the Config with its Healthcheck, which every container names).
// A fresh process builds them on first use (HostConfig's many types above all),
// which a warm run would do after the engine's answers arrive, between the kept
// container's inspect and the exec's creation; the head start runs this beside
// its wait for those answers (0.2 ms off that gap's median at load 12, see
// docs/performance.md, "The warm launch, sixth round"). What is encoded is unchanged.
func warmEncoders() {
	specHash(&dockercontainer.Config{Healthcheck: noHealthcheck()}, &dockercontainer.HostConfig{})
	_, _ = json.Marshal(&wire.Manifest{})
	_, _ = json.Marshal(&dockercontainer.ExecOptions{})
}

// specHash is a short hash of what the container is made of, labels aside. A
// seccomp profile counts by its SHA-256: encoding its 11 KB of JSON once more, as
// a JSON string with every quote escaped, took a fresh process 0.6–0.9 ms more than
// the digest, on a warm run's critical path; the digest names it as well.
func specHash(cfg *dockercontainer.Config, hc *dockercontainer.HostConfig) string {
	c := *cfg
	c.Labels = nil
	h := *hc
	h.SecurityOpt = slices.Clone(hc.SecurityOpt)
	for i, o := range h.SecurityOpt {
		if profile, ok := strings.CutPrefix(o, "seccomp="); ok {
			sum := sha256.Sum256([]byte(profile))
			h.SecurityOpt[i] = "seccomp=sha256:" + hex.EncodeToString(sum[:])
		}
	}
	b, _ := json.Marshal(struct {
		C *dockercontainer.Config
		H *dockercontainer.HostConfig
		V string
	}{&c, &h, cfg.Labels[LabelVersion]})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
