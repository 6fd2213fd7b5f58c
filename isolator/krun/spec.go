package krun

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/containers/podman/v5/pkg/specgen"
	spec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/containerview"
	"github.com/devsandbox/devsandbox/isolator/shim/wire"
	"github.com/devsandbox/devsandbox/syscalls"
)

// InitPath is where devsandbox-init appears in every container: the entrypoint, and
// isolator.ShimPath, where tools such as ssh's ProxyCommand expect it.
const InitPath = isolator.ShimPath

// ProxySocket is where the session proxy's Unix socket appears (egress proxy and
// allowlist).
const ProxySocket = "/run/devsandbox/proxy.sock"

// PublishDir is where the host's publish directory (egress.Rules.PublishDir) appears:
// the init serves each published port there as <SANDBOX_PORT>.sock.
const PublishDir = "/run/devsandbox/publish"

// Descriptors of the network namespace's owning user namespace and of the network
// namespace itself in the nsenter processes that apply the egress rules.
const (
	userNSFD = 3
	netNSFD  = 4
)

// VMConfigPath is the file crun's krun handler reads, inside the container's root and
// before the VM boots, for the VM's vCPUs and memory ({"cpus":N,"ram_mib":M}).
const VMConfigPath = "/.krun_vm.json"

// Annotations on the container. crun selects its libkrun handler with HandlerAnnotation
// (the runtime binary named krun implies it); youki reads the VM size from the
// krun.* annotations, crun from VMConfigPath.
const (
	HandlerAnnotation = "run.oci.handler"
	CPUsAnnotation    = "krun.cpus"
	RAMAnnotation     = "krun.ram_mib"
)

// Labels on everything the backend creates (the docker backend's names).
const (
	LabelProject = "dev.devsandbox.project"
	LabelName    = "dev.devsandbox.name"
	LabelDir     = "dev.devsandbox.dir"
	LabelVersion = "dev.devsandbox.version"
	LabelRuntime = "dev.devsandbox.runtime"
)

// Options are the krun.* settings and the host facts Run probes once. Render uses
// them as given.
type Options struct {
	Image     string // krun.image
	Runtime   string // krun.runtime: the OCI runtime podman starts (krun: a libkrun microVM)
	CPUs      int    // krun.cpus: the VM's vCPUs
	MemoryMiB int    // krun.memory_mib: the VM's memory
	Home      string // docker.home: the in-container home
	Version   string // devsandbox version (a label)

	// NofileHard is the host's hard RLIMIT_NOFILE, which the container's must not
	// exceed (podman's rootless default of 1048576 can, and then the runtime fails
	// with "operation not permitted"); 0 leaves podman's default.
	NofileHard uint64
	// NprocHard is the host's hard RLIMIT_NPROC (0: unlimited); limits.pids above it
	// is lowered to it, as the runtime cannot raise a hard limit.
	NprocHard uint64
	// InitSource is the host path of devsandbox-init; empty means the Plan's Self.
	InitSource string
	// Binaries are the host's nsenter, nft and ip, which apply the egress rules
	// (allowlist) from the host; zero means egress.DefaultBinaries.
	Binaries egress.Binaries
	// BootID is the host's boot id (pin.BootID), set by Run: the init compares the
	// identities of pinned mount sources only on the same kernel (runc, not a VM).
	BootID string
}

// VM reports whether the runtime boots a microVM (anything but plain runc, which the
// tests use to exercise the rest through podman).
func (o Options) VM() bool { return o.Runtime != "runc" }

// hostFile is a generated, non-secret file Run writes on the host before the
// container is created; its name is a hash of its content.
type hostFile struct {
	Path    string
	Content []byte
}

// Spec is a rendered podman run.
type Spec struct {
	Gen *specgen.SpecGenerator

	Files     []hostFile
	Dirs      []string
	EmptyFile string
	// Optional lists bind sources that may vanish before launch: Run drops the mount
	// (and its check) when the source is gone.
	Optional map[string]bool
	// Secrets travel in the Hello frame on the attach stream, never in the spec.
	Secrets []isolator.Secret
	// Env is the command's environment for the script (FromHost values as names).
	Env []isolator.EnvVar
	// Manifest is what the init verifies (also in Gen.Env).
	Manifest *wire.Manifest
	// Policy is the syscall policy (for the script).
	Policy syscalls.Policy
	TTY    bool
	// Firewall (egress allowlist) are the calls Run makes on the host, once the
	// container runs and before the init gets its go (the Hello frame), to apply the
	// egress rules in the container's network namespace; nsenter gets that namespace
	// and the user namespace owning it as descriptors userNSFD and netNSFD.
	Firewall []egress.Call
}

// specGen renders p as a podman SpecGenerator. It is pure: host paths and facts come
// from the Plan and opts; nothing is read or written.
func specGen(p *isolator.Plan, opts Options) (*Spec, error) {
	switch p.Egress.Mode {
	case egress.Open, egress.None:
	case egress.Proxy, egress.Allowlist:
		if p.Egress.Proxy.Unix == "" {
			return nil, fmt.Errorf("egress mode %s needs the session proxy's Unix socket", p.Egress.Mode)
		}
	default:
		return nil, fmt.Errorf("egress mode %s is not available with the krun isolator; use --egress=allowlist, proxy, open or none", p.Egress.Mode)
	}
	if len(p.Egress.Forwards) > 0 && p.Egress.PublishDir == "" {
		return nil, fmt.Errorf("published ports need the session's publish directory")
	}
	if opts.Image == "" {
		return nil, fmt.Errorf("krun.image is empty")
	}
	if opts.Runtime == "" {
		return nil, fmt.Errorf("krun.runtime is empty")
	}
	if opts.VM() && (opts.CPUs < 1 || opts.CPUs > 16 || opts.MemoryMiB < 128) {
		return nil, fmt.Errorf("krun.cpus must be 1 to 16 (libkrun's limit) and krun.memory_mib at least 128 (have %d and %d)", opts.CPUs, opts.MemoryMiB)
	}
	home := opts.Home
	if home == "" {
		home = "/home/" + p.User.Name
	}
	initSrc := opts.InitSource
	if initSrc == "" {
		initSrc = p.Self
	}
	s := &Spec{Optional: map[string]bool{}, TTY: p.TTY, Dirs: p.PrivateDirs, EmptyFile: p.EmptyFile, Policy: p.Syscalls}
	filesDir := filepath.Join(p.StateDir, "krun")
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
	man := &wire.Manifest{SecretDir: isolator.SecretDir, BootID: opts.BootID}
	if len(p.Command) == 1 && p.Command[0] == p.User.Shell && p.User.Shell != "/bin/sh" {
		man.ShellFallback = p.User.Shell
	}
	switch p.Egress.Mode {
	case egress.None, egress.Proxy:
		man.Network = "none"
	case egress.Allowlist:
		man.Network = "firewall"
		// With runc the container's loopback is the network namespace the rules are
		// in, so the init sees the probe rule refuse its datagram. A microVM's guest
		// has a loopback of its own, where a probe proves nothing: there the rules
		// are verified by Run reading them back on the host (the nft list call).
		if !opts.VM() {
			man.EgressProbe = egress.ProbeAddr
		}
	}
	// In the VM the guest's statfs shows its virtio-fs mount's flags, not the host
	// binds': the init probes read-only-ness instead.
	man.ProbeReadOnly = opts.VM()
	// Limits: tasks by RLIMIT_NPROC (the container has a user namespace of its own,
	// where the kernel counts its tasks only), set by the runtime and again by the
	// init; memory and CPUs by the VM's size, or by cgroups with runc.
	man.Nproc = nproc(p.Limits.Pids, opts.NprocHard)
	man.Memory = p.Limits.Memory
	man.OOMFromVMStat = opts.VM()
	if opts.VM() && !p.Syscalls.Unfiltered {
		// A profile for the runtime would filter the VMM on the host: in the guest
		// the init loads the policy itself.
		pol := p.Syscalls
		man.Seccomp = &pol
	}
	mounts := []spec.Mount{
		tmpfs("/tmp", "rw", "exec", "nosuid", "nodev", "mode=1777"),
		tmpfs("/run", "rw", "nosuid", "nodev", "mode=755"),
		tmpfs(isolator.SecretDir, "rw", "nosuid", "nodev", "noexec", "mode=0700", "U"),
	}
	visible := containerview.VisibleMounts(p, home)
	for i, m := range visible {
		dst := m.Path
		switch m.Kind {
		case isolator.Bind:
			mounts = append(mounts, bind(m.Source, dst, m.ReadOnly))
			if m.Optional {
				s.Optional[m.Source] = true
			}
			kind := wire.CheckRW
			if m.ReadOnly {
				kind = wire.CheckRO
			}
			man.Checks = append(man.Checks, containerview.Identify(wire.Check{Kind: kind, Path: dst}, m))
		case isolator.MaskFile:
			mounts = append(mounts, bind(p.EmptyFile, dst, true))
			man.Checks = append(man.Checks, containerview.Identify(wire.Check{Kind: wire.CheckMaskFile, Path: dst}, m))
		case isolator.MaskDir:
			mounts = append(mounts, tmpfs(dst, "ro", "nosuid", "nodev", "noexec", "size=4k", "mode=755"))
			man.Checks = append(man.Checks, wire.Check{Kind: wire.CheckMaskDir, Path: dst, Allow: containerview.MountPointsIn(dst, visible[i+1:])})
		case isolator.TmpDir:
			mounts = append(mounts, tmpfs(dst, "rw", "nosuid", "nodev", "mode=0700", "U"))
		case isolator.Data:
			mounts = append(mounts, bind(file(m.Content), dst, true))
			man.Checks = append(man.Checks, wire.Check{Kind: wire.CheckData, Path: dst, Size: int64(len(m.Content))})
		default:
			return nil, fmt.Errorf("mount %s: unknown kind %d", dst, m.Kind)
		}
	}
	netns := specgen.Namespace{NSMode: specgen.NoNetwork}
	switch p.Egress.Mode {
	case egress.Open:
		netns = specgen.Namespace{NSMode: specgen.Default}
	case egress.Allowlist:
		// podman's default network has a route out; the rules, applied by Run before
		// the command starts, keep only what the allowlist names. Names resolved at
		// launch reach the container as the Plan's /etc/hosts (a Data mount).
		netns = specgen.Namespace{NSMode: specgen.Default}
		calls, err := egress.NsenterCalls(p.Egress, egress.Target{UserFD: userNSFD, NetFD: netNSFD}, bins(opts))
		if err != nil {
			return nil, fmt.Errorf("egress allowlist: %w", err)
		}
		s.Firewall = calls
	}
	if p.Egress.NeedsProxy() {
		// The init forwards SandboxProxyAddr on the container's loopback to the
		// session proxy's socket, as bwrap's shim does.
		mounts = append(mounts, bind(p.Egress.Proxy.Unix, ProxySocket, false))
		man.Forward = egress.SandboxProxyAddr + "=" + ProxySocket
	}
	if len(p.Egress.Forwards) > 0 {
		// The host relays 127.0.0.1:HOST_PORT to <SANDBOX_PORT>.sock in the publish
		// directory, where the init serves it and relays to 127.0.0.1:SANDBOX_PORT.
		mounts = append(mounts, bind(p.Egress.PublishDir, PublishDir, false))
		for _, f := range p.Egress.Forwards {
			man.Publish = append(man.Publish, fmt.Sprintf("%d=%s/%d.sock", f.SandboxPort, PublishDir, f.SandboxPort))
		}
	}
	passwd, group := containerview.UserFiles(p.User, home)
	mounts = append(mounts,
		bind(initSrc, InitPath, true),
		bind(file(passwd), "/etc/passwd", true),
		bind(file(group), "/etc/group", true),
	)
	man.Checks = append(man.Checks,
		wire.Check{Kind: wire.CheckRO, Path: InitPath},
		wire.Check{Kind: wire.CheckData, Path: "/etc/passwd", Size: int64(len(passwd))},
		wire.Check{Kind: wire.CheckData, Path: "/etc/group", Size: int64(len(group))},
	)
	annotations := map[string]string{}
	var devices []spec.LinuxDevice
	if opts.VM() {
		// crun reads the VM size from a file in the container's root, before the VM
		// starts (so a single-file bind is fine here: the guest never needs it).
		vm := []byte(fmt.Sprintf(`{"cpus":%d,"ram_mib":%d}`+"\n", opts.CPUs, opts.MemoryMiB))
		mounts = append(mounts, bind(file(vm), VMConfigPath, true))
		annotations[HandlerAnnotation] = "krun"
		annotations[CPUsAnnotation] = fmt.Sprint(opts.CPUs)
		annotations[RAMAnnotation] = fmt.Sprint(opts.MemoryMiB)
		devices = append(devices, spec.LinuxDevice{Path: "/dev/kvm"})
	}

	env := containerview.Env(p, home)
	s.Env = env
	s.Secrets = append(s.Secrets, p.Secrets...)
	s.Manifest = man
	envMap := map[string]string{wire.ManifestEnv: man.Encode()}
	for _, e := range env {
		envMap[e.Name] = e.Value
	}
	g := &specgen.SpecGenerator{}
	g.Name = ""
	g.Image = opts.Image
	g.RawImageName = opts.Image
	g.OCIRuntime = opts.Runtime
	g.Entrypoint = []string{InitPath}
	g.Command = append([]string{shimContainerArg, "--framed", "--role=run", "--"}, p.Command...)
	g.Env = envMap
	g.Stdin = ptr(true)
	g.Terminal = ptr(false)
	g.Remove = ptr(true)
	g.Labels = map[string]string{
		LabelProject: p.Project.ID,
		LabelName:    p.Project.Name,
		LabelDir:     p.Project.Dir,
		LabelVersion: opts.Version,
		LabelRuntime: opts.Runtime,
	}
	g.Annotations = annotations
	g.Hostname = "devsandbox"
	g.WorkDir = p.Workdir
	g.User = fmt.Sprintf("%d:%d", p.User.UID, p.User.GID)
	g.UserNS = specgen.Namespace{NSMode: specgen.KeepID}
	g.Passwd = ptr(false)
	g.ReadOnlyFilesystem = ptr(true)
	g.CapDrop = []string{"all"}
	g.NoNewPrivileges = ptr(true)
	g.Mounts = sortMounts(mounts)
	g.Devices = devices
	g.NetNS = netns
	g.Rlimits = rlimits(opts, man.Nproc)
	if !opts.VM() {
		if !p.Syscalls.Unfiltered {
			profile := syscalls.OCIJSON(syscalls.Compile(p.Syscalls))
			g.SeccompProfilePath = file(profile)
		}
		g.ResourceLimits = resources(p.Limits)
	}
	s.Gen = g
	return s, nil
}

// resources are the cgroup limits of a container run by runc: memory without swap
// (a hog is killed, not swapped out) and CPU time per 100 ms.
func resources(l isolator.Limits) *spec.LinuxResources {
	if l.Memory <= 0 && l.CPUs <= 0 {
		return nil
	}
	r := &spec.LinuxResources{}
	if l.Memory > 0 {
		m := l.Memory
		r.Memory = &spec.LinuxMemory{Limit: &m, Swap: &m}
	}
	if l.CPUs > 0 {
		period := uint64(100000)
		quota := int64(l.CPUs * float64(period))
		r.CPU = &spec.LinuxCPU{Period: &period, Quota: &quota}
	}
	return r
}

// nproc is limits.pids as the container's RLIMIT_NPROC: no higher than the host's
// hard limit, which the runtime cannot raise.
func nproc(pids int, hard uint64) int {
	if pids > 0 && hard > 0 && uint64(pids) > hard {
		return int(hard)
	}
	return pids
}

// bins are the egress tools of opts.
func bins(o Options) egress.Binaries {
	if o.Binaries == (egress.Binaries{}) {
		return egress.DefaultBinaries
	}
	return o.Binaries
}

// shimContainerArg is shim.ContainerArg (not imported: the shim package is Linux-only).
const shimContainerArg = "--container"

func ptr[T any](v T) *T { return &v }

func bind(src, dst string, ro bool) spec.Mount {
	o := []string{"rbind", "rw"}
	if ro {
		o = []string{"rbind", "ro"}
	}
	return spec.Mount{Type: "bind", Source: src, Destination: dst, Options: o}
}

func tmpfs(dst string, opts ...string) spec.Mount {
	return spec.Mount{Type: "tmpfs", Source: "tmpfs", Destination: dst, Options: opts}
}

// rlimits caps the open files at the host's hard limit, and the tasks at nproc.
func rlimits(o Options, nproc int) []spec.POSIXRlimit {
	var r []spec.POSIXRlimit
	if o.NofileHard != 0 {
		r = append(r, spec.POSIXRlimit{Type: "nofile", Hard: o.NofileHard, Soft: o.NofileHard})
	}
	if nproc > 0 {
		r = append(r, spec.POSIXRlimit{Type: "nproc", Hard: uint64(nproc), Soft: uint64(nproc)})
	}
	return r
}

// sortMounts orders mounts parents first (stable within a depth).
func sortMounts(ms []spec.Mount) []spec.Mount {
	sort.SliceStable(ms, func(i, j int) bool {
		return strings.Count(ms[i].Destination, "/") < strings.Count(ms[j].Destination, "/")
	})
	return ms
}
