package krun

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containers/image/v5/manifest"
	"github.com/containers/podman/v5/pkg/specgen"
	spec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/devsandbox/devsandbox/egress"
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
)

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

// LabelRuntime is the OCI runtime a container runs with (besides the labels every
// container backend puts, package container).
const LabelRuntime = "dev.devsandbox.runtime"

// LabelRunMark is the run mark (package runmark) the run of a container holds for its
// life: the file's path. A container whose mark is dead is a dead run's (leftovers.go).
const LabelRunMark = "dev.devsandbox.runmark"

// LabelRunWhere says where LabelRunMark's path names the mark (runmark.Where): only
// runs there ask it.
const LabelRunWhere = "dev.devsandbox.runmark.where"

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
	// Inherited are the service's own limits (its /proc/PID/limits), which the
	// container is given of every rlimit the spec sets no other value for: a spec
	// that sets each one leaves podman nothing to add. podman 5 adds a
	// containers.conf's default_ulimits (memlock, core, …) to an API-created
	// container's spec where it sets none, and runc cannot raise a hard limit above
	// the service's. Render has none; Run reads them once it has the service.
	Inherited []spec.POSIXRlimit
	// InitSource is the host path of devsandbox-init; empty means the Plan's Self.
	InitSource string
	// Binaries are the host's nsenter, nft and ip, which apply the egress rules
	// (allowlist) from the host; zero means egress.DefaultBinaries.
	Binaries egress.Binaries
	// BootID is the host's boot id (pin.BootID), set by Run: the init compares the
	// identities of pinned mount sources only on the same kernel (runc, not a VM).
	BootID string
	// Anchors are, by path, where podman binds each anchor from (a bind whose source
	// a sandbox can swap for a symlink, container.Mount.Anchor): the file or
	// directory devsandbox pinned, bound in podman's own mount namespace at a path
	// no sandbox can swap (Host.StageAnchors). A path of the project would be
	// resolved again when the runtime mounts it, after a concurrent session swapped
	// it for a link. Run sets it; nil renders a placeholder (--dry-run).
	Anchors map[string]string
	// ImageEnv is the image's ENV, "NAME=value" (Run reads it from podman; none for
	// --dry-run): podman gives it to the container under the variables the spec
	// sets, so the spec removes it and the init gives it back to the command alone
	// (imageEnv).
	ImageEnv []string
}

// VM reports whether the runtime boots a microVM (anything but plain runc, which the
// tests use to exercise the rest through podman).
func (o Options) VM() bool { return o.Runtime != "runc" }

// Spec is a rendered podman run.
type Spec struct {
	// Reserve is the disk reserve's comment (diskguard.Script), for Script.
	Reserve string
	Gen     *specgen.SpecGenerator
	// Layout is what the spec was translated from: the host files, secrets and
	// environment the script names.
	Layout *container.Layout
	// Policy is the syscall policy (for the script).
	Policy syscalls.Policy
	// Firewall (egress allowlist) are the calls Run makes on the host, once the
	// container runs and before the init gets its go (the Hello frame), to apply the
	// egress rules in the container's network namespace; nsenter gets that namespace
	// and the user namespace owning it as descriptors userNSFD and netNSFD.
	Firewall []egress.Call
	// ByPath (--dry-run) are the anchors the script binds by their path, so that it
	// runs as printed; a launch stages each from the directory devsandbox pinned.
	ByPath []string
}

// specGen renders p as a podman SpecGenerator. It is pure: host paths and facts come
// from the Plan and opts; nothing is read or written.
func specGen(p *isolator.Plan, opts Options) (*Spec, error) {
	l, err := layout(p, opts)
	if err != nil {
		return nil, err
	}
	return translate(p, l, opts)
}

// layout is p's container layout with opts.
func layout(p *isolator.Plan, opts Options) (*container.Layout, error) {
	// Limits: tasks by RLIMIT_NPROC (the container has a user namespace of its own,
	// where the kernel counts its tasks only), set by the runtime and again by the
	// init; memory and CPUs by the VM's size, or by cgroups with runc.
	l, err := container.Lay(p, container.Options{Home: opts.Home, InitSource: opts.InitSource, FilesDir: filepath.Join(p.StateDir, "krun"),
		BootID: opts.BootID, VM: opts.VM(), Nproc: nproc(p.Limits.Pids, opts.NprocHard), OwnTmp: true}, opts.Version)
	if err != nil {
		return nil, err
	}
	switch {
	case opts.Image == "":
		return nil, fmt.Errorf("krun.image is empty")
	case opts.Runtime == "":
		return nil, fmt.Errorf("krun.runtime is empty")
	case opts.VM() && (opts.CPUs < 1 || opts.CPUs > 16 || opts.MemoryMiB < 128):
		return nil, fmt.Errorf("krun.cpus must be 1 to 16 (libkrun's limit) and krun.memory_mib at least 128 (have %d and %d)", opts.CPUs, opts.MemoryMiB)
	}
	return l, nil
}

// translate renders the layout l of p as a SpecGenerator. Pure.
func translate(p *isolator.Plan, l *container.Layout, opts Options) (*Spec, error) {
	s := &Spec{Reserve: diskguard.Script(p), Layout: l, Policy: p.Syscalls}
	var mounts []spec.Mount
	for _, m := range l.Mounts {
		switch m.Type {
		case container.Bind:
			src := m.Source
			if m.Anchor {
				staged, ok := opts.Anchors[m.Source]
				switch {
				case !ok && opts.Anchors != nil:
					return nil, fmt.Errorf("%w: %s, which a sandbox can swap for a symlink, was not staged from the file devsandbox pinned", isolator.ErrProtection, m.Source)
				case !ok: // --dry-run: by path, and the script says so
					staged = m.Source
					s.ByPath = append(s.ByPath, m.Source)
				}
				src = staged
			}
			mounts = append(mounts, bind(src, m.Target, m.ReadOnly))
		case container.MaskDir:
			// notmpcopyup: podman otherwise asks the runtime to copy the directory's
			// files into the tmpfs, which would show the mask what it hides.
			mounts = append(mounts, tmpfs(m.Target, append(container.MaskOptions("U"), "notmpcopyup")...))
		case container.Scratch:
			mounts = append(mounts, tmpfs(m.Target, m.Tmpfs.Options("U")...))
		default:
			return nil, fmt.Errorf("mount %s: a named volume is not possible with the krun isolator", m.Target)
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
	annotations := map[string]string{}
	var devices []spec.LinuxDevice
	if opts.VM() {
		// crun reads the VM size from a file in the container's root, before the VM
		// starts (so a single-file bind is fine here: the guest never needs it).
		vm := []byte(fmt.Sprintf(`{"cpus":%d,"ram_mib":%d}`+"\n", opts.CPUs, opts.MemoryMiB))
		mounts = append(mounts, bind(l.File(vm), VMConfigPath, true))
		annotations[HandlerAnnotation] = "krun"
		annotations[CPUsAnnotation] = fmt.Sprint(opts.CPUs)
		annotations[RAMAnnotation] = fmt.Sprint(opts.MemoryMiB)
		devices = append(devices, spec.LinuxDevice{Path: "/dev/kvm"})
	}
	envMap := map[string]string{}
	for _, e := range l.Env {
		envMap[e.Name] = e.Value
	}
	unset, give := imageEnv(opts.ImageEnv, envMap)
	m := *l.Manifest
	m.ImageEnv = give
	envMap[wire.ManifestEnv] = m.Encode()
	g := &specgen.SpecGenerator{}
	g.Name = ""
	g.Image = opts.Image
	g.RawImageName = opts.Image
	g.OCIRuntime = opts.Runtime
	g.Entrypoint = []string{InitPath}
	g.Command = l.Init
	g.Env = envMap
	g.UnsetEnv = unset
	g.Stdin = ptr(true)
	g.Terminal = ptr(false)
	g.Remove = ptr(false) // the run removes it once it has its exit status (see Run)
	g.Labels = maps.Clone(l.Labels)
	g.Labels[LabelRuntime] = opts.Runtime
	g.Annotations = annotations
	g.Hostname = "devsandbox"
	g.WorkDir = l.Workdir
	g.User = l.User
	g.UserNS = specgen.Namespace{NSMode: specgen.KeepID}
	// The image's HEALTHCHECK is a command podman would run in the container on its
	// own schedule, outside the init (the docker isolator's noHealthcheck).
	g.HealthConfig = &manifest.Schema2HealthConfig{Test: []string{"NONE"}}
	g.Passwd = ptr(false)
	g.ReadOnlyFilesystem = ptr(true)
	g.CapDrop = []string{"all"}
	g.NoNewPrivileges = ptr(true)
	g.Mounts = container.SortMounts(mounts, func(m spec.Mount) string { return m.Destination })
	g.Devices = devices
	g.NetNS = netns
	g.Rlimits = rlimits(opts, l.Manifest.Nproc)
	if !opts.VM() {
		if !p.Syscalls.Unfiltered {
			profile := syscalls.Profile(p.Syscalls)
			g.SeccompProfilePath = l.File(profile)
		}
		g.ResourceLimits = resources(p.Limits)
	}
	s.Gen = g
	return s, nil
}

// imageEnv splits the image's ENV (image, "NAME=value") against env, the variables
// the container's spec sets: unset names each image variable env does not set, but
// PATH (podman then leaves it out of the container's environment, which is the
// init's), and give is those variables with their values, which the init gives the
// command alone (wire.Manifest.ImageEnv), under the run's and the session's. An
// image's GODEBUG, GOTRACEBACK, GOMAXPROCS or GOMEMLIMIT would otherwise tune the
// init's Go runtime from its start. PATH stays: the init's lookups use it and no Go
// program reads it at its start. Pure.
func imageEnv(image []string, env map[string]string) (unset, give []string) {
	for _, kv := range image {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || k == wire.ManifestEnv {
			continue
		}
		if _, set := env[k]; set {
			continue
		}
		give = append(give, kv)
		if k != "PATH" {
			unset = append(unset, k)
		}
	}
	return unset, give
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

// rlimits caps the open files at the host's hard limit, and the tasks at nproc;
// every other rlimit is the service's own (Options.Inherited), which it can give.
func rlimits(o Options, nproc int) []spec.POSIXRlimit {
	var r []spec.POSIXRlimit
	if o.NofileHard != 0 {
		r = append(r, spec.POSIXRlimit{Type: "nofile", Hard: o.NofileHard, Soft: o.NofileHard})
	}
	if nproc > 0 {
		r = append(r, spec.POSIXRlimit{Type: "nproc", Hard: uint64(nproc), Soft: uint64(nproc)})
	}
	for _, l := range o.Inherited {
		if !slices.ContainsFunc(r, func(s spec.POSIXRlimit) bool { return rlimitName(s.Type) == rlimitName(l.Type) }) {
			r = append(r, l)
		}
	}
	return r
}
