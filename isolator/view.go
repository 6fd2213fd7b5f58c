package isolator

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
)

// Error classes of a View. Its errors wrap one of them and name the path and, where one
// applies, the mount deciding it (its Why).
var (
	// ErrOutsideView: the path is not visible in the sandbox at all, or the view cannot
	// say what the sandbox would show there (a symlink loop, a symlink over a mount point).
	ErrOutsideView = errors.New("not visible in the sandbox view")
	// ErrMasked: a masked file or directory, or a secret file. Secrets are for the
	// sandboxed process only; they are never readable through a View.
	ErrMasked = errors.New("masked in the sandbox view")
	// ErrReadOnly: visible, but read-only in the sandbox.
	ErrReadOnly = errors.New("read-only in the sandbox view")
	// ErrNoHostPath: visible, but backed by no host file (a tmpfs, generated content),
	// so a process outside the sandbox cannot reach what the sandbox sees there.
	ErrNoHostPath = errors.New("not backed by a host path")
	// ErrInvalidPath: the path is not absolute or contains a NUL byte.
	ErrInvalidPath = errors.New("invalid path")
)

// maxLinks is how many symlinks one resolution follows, as Linux's MAXSYMLINKS.
const maxLinks = 40

// access is what the sandbox lets a process do below one view entry.
type access int

const (
	hidden   access = iota // not visible, or not the host's file (/proc, /dev, /run)
	masked                 // masks and secret files
	readOnly               // reads only
	writable               // reads and writes
)

// entry is one row of the mount table a View mirrors.
type entry struct {
	target string // clean absolute in-sandbox path
	source string // host path shown at target; "" when none backs it
	link   string // the target is a symlink to this (a system path recreated as one)
	access access
	why    string
}

// View answers, for paths as the sandboxed command would name them, whether the sandbox
// lets a process read or write them, mirroring how the isolator that runs a Plan
// places it: ViewOf makes it, from that isolator (a View made otherwise, the zero
// View, denies every path). An agent harness running file tools in its own process,
// outside the sandbox, opens each path with Open, which checks it as CheckRead or
// CheckWrite does and opens the host file in the same step.
//
// bwrap's view is the Plan's mount table, in bwrap's order (a container's differs as
// Placement says): the root (the read-only host
// root with system_binds = ["host"], else nothing), the system paths (read-only),
// /dev, /proc and /run, /tmp, Plan.Mounts, then the secret files. The last entry at or
// above a path decides it. That gives:
//   - readable: the project, the sandbox home, binds, generated files, tmpfs mounts and
//     the system view (the sandbox sees /usr and the rest of it read-only, so a View
//     does too);
//   - writable: read-write binds (the project unless read-only, writable_dirs, rw
//     binds, the sandbox home), /tmp and TmpDir mounts; read-only binds (.git/hooks,
//     .git/config, .devsandbox.toml, ro tool bindings) are not, nor is a directory
//     holding a read-only or masked mount (see CheckWrite);
//   - masked, for reading and writing: MaskFile and MaskDir mounts with everything
//     below them (unless a later mount covers part of it), and secret files;
//   - not visible: everything else, including /dev, /proc and /run, which the sandbox
//     has private copies of: their host counterparts are different files (the
//     harness's own /proc/self/environ, say).
//
// A path is cleaned lexically first (/p/../etc is /etc), then resolved as the sandbox
// would resolve it: component by component, reading symlinks on the host through the
// mount that backs each component and following their targets in the sandbox's
// namespace (an absolute target in the project names an in-sandbox path, not a host
// one). Both the cleaned and the resolved path must be allowed. Components that do not
// exist are taken as written, so the path of a file yet to be created can be checked.
//
// CheckRead, CheckWrite and HostPath judge by name only and are not safe to act on
// while the sandbox runs: a sandboxed process can swap a checked directory for a
// symlink before the harness opens the path (O_NOFOLLOW guards only the last
// component), or move a protected file under another name. Open closes that gap;
// file tools use it. A
// View mirrors the Plan as built: optional binds are taken to be present, and files
// created on the host after the Plan was built are not masked (nor are they in the
// running sandbox). A Plan bwrap cannot render gives a View that denies every path.
//
// A View is safe for concurrent use once Readlink is set.
type View struct {
	// Readlink reads a symlink on the host (os.Readlink by default). Any error means
	// the path is not a symlink or does not exist. Tests replace it.
	Readlink func(name string) (string, error)

	entries []entry
	err     error // the Plan cannot be mirrored: every check fails with it
	// guards are the host files the masks and read-only binds hold, by identity, as
	// ViewOf found them (see Open).
	guards map[fileID]guard
}

// Placement is where an isolator's sandbox puts a Plan, as far as a View depends on
// it; the Plan, the same for every isolator, does not say. Only an isolator gives one
// (Viewer), and only ViewOf turns it into a View: a harness does not choose it.
type Placement struct {
	// Container is nil for bwrap's sandbox: the in-sandbox home is the host home's
	// path, p.User.HostHome, and the root and system paths are the host's. Set, it is
	// a container's (docker, krun): the container's root, /usr and /etc included, is
	// its image's, not the host's, so every path no mount of the Plan covers is
	// outside the view (ErrOutsideView) even where p's system view, which only bwrap
	// shows, names a host path; /tmp is the container's own tmpfs (ErrNoHostPath);
	// the sandbox home and the home-relative mounts are at Container.Path, and the
	// host home's path shows only what the Plan mounts at host paths there (the
	// project, binds). With Container.Volume the home itself has no host path: a host
	// file in SandboxHome is not what the container has at the same name, and is
	// neither read nor created for it.
	Container *ContainerHome
}

// Viewer is implemented by an isolator that can say where its sandbox places a Plan
// (bwrap: the host's system view and the home at the host home's path; docker and
// krun: the image's root, the home at docker.home, on a remote engine a volume). The
// isolators a harness embeds implement it: bwrap.Isolator, the docker and krun stubs
// (packages isolator/docker/helper and isolator/krun/helper) and the backends
// themselves (docker.Isolator, krun.Isolator). ViewPlacement is pure but for, on
// docker, resolving the engine's address from the isolator's settings; it starts
// nothing. A harness does not call it: ViewOf does.
type Viewer interface {
	ViewPlacement(p *Plan) (Placement, error)
}

// ViewOf returns the View of p as iso, the isolator that runs p, places it: what a
// harness's file tools use (View.Open). It is the only way to make a View: the
// isolator knows where its sandbox puts the home and whether a host file backs it;
// the Plan alone does not, and bwrap's view of a Plan a container runs shows host
// files that container does not have (its /etc is its image's), so a harness cannot
// choose the view itself. An isolator that cannot say fails with ErrUnavailable: a
// harness then has no View, rather than bwrap's for a container.
//
// The View keeps no reference to p. It records which host files the masks and the
// read-only binds hold (one lstat each), so that Open knows them wherever the sandbox
// later moves them: make it before the sandbox starts (before Run; for bwrap's
// library commands, before the first command of the session, or take the session's,
// bwrap.Session.View).
func ViewOf(iso Isolator, p *Plan) (*View, error) {
	v, ok := iso.(Viewer)
	if !ok {
		name := "given"
		if iso != nil {
			name = iso.Name()
		}
		return nil, fmt.Errorf("%w: the %s isolator cannot say what its sandbox shows of the host, so a harness's file tools have no view of it: pass ViewOf the isolator value that runs the Plan (bwrap.Isolator, or the docker and krun helper stubs, helper.New and helper.Stub)", ErrUnavailable, name)
	}
	pl, err := v.ViewPlacement(p)
	if err != nil {
		return nil, err
	}
	return newView(p, pl.Container), nil
}

// HostVisible reports whether a sandbox of p may read the host file name at its own
// path: in bwrap's view, which shows the most of the host (its system view; a
// container's root is its image's, so a container shows no more). The planner masks
// by it what no sandbox may read (the proxy CA's key). It is not a harness's check
// of a path: that is the View of the isolator that runs p (ViewOf).
func HostVisible(p *Plan, name string) bool {
	return newView(p, nil).CheckRead(name) == nil
}

// ContainerHome is where a container isolator (docker, krun) puts the sandbox home.
type ContainerHome struct {
	// Path is the in-container home (docker.home); "" is /home/<user>, the
	// isolators' default.
	Path string
	// Volume: the home is an engine volume, not a bind of the host's SandboxHome (the
	// docker isolator's on an engine it does not reach through a local Unix socket:
	// a remote engine, Docker Desktop; its helper.Stub's PinsSources is false). No
	// host file backs it: below it, only the Plan's binds have host paths.
	Volume bool
}

// newView is the view of p in bwrap (ctr nil) or in a container with the home ctr.
func newView(p *Plan, ctr *ContainerHome) *View {
	v := &View{Readlink: os.Readlink}
	if ctr != nil {
		c := *ctr
		if c.Path == "" {
			c.Path = "/home/" + p.User.Name
		}
		ctr = &c
	}
	var roBinds []int // indexes of Plan.Mounts' read-only binds in v.entries
	add := func(target, source string, a access, why string) {
		v.entries = append(v.entries, entry{target: path.Clean(target), source: source, access: a, why: why})
	}
	home := p.User.HostHome
	switch {
	case ctr != nil:
		home = ctr.Path
		add("/", "", hidden, "the container image's file system, not the host's")
	case p.System.Host:
		add("/", "/", readOnly, "system view: host root")
	default:
		add("/", "", hidden, "sandbox root")
	}
	if ctr == nil {
		for _, sp := range p.System.Paths {
			add(sp.Path, sp.Path, readOnly, "system view")
			if sp.Link != "" {
				v.entries[len(v.entries)-1].link = sp.Link
			}
		}
	}
	for _, d := range []string{"/dev", "/proc", "/run"} {
		add(d, "", hidden, "private to the sandbox")
	}
	switch {
	case ctr != nil:
		add("/tmp", "", writable, "the container's tmpfs /tmp")
	case p.Tmp.Kind == "tmpfs":
		add("/tmp", "", writable, "tmpfs /tmp")
	case p.Tmp.Kind == "session", p.Tmp.Kind == "shm":
		src := ""
		if p.Tmp.Session != "" {
			src = path.Join(p.Tmp.Dir, p.Tmp.Session)
		}
		add("/tmp", src, writable, "session /tmp")
	default:
		v.err = fmt.Errorf("unknown sandbox.tmp %q: %w", p.Tmp.Kind, ErrOutsideView)
	}
	if ctr != nil && !path.IsAbs(home) {
		v.err = fmt.Errorf("the in-sandbox home %q is not an absolute path: %w", home, ErrOutsideView)
	}
	for _, m := range p.Mounts {
		dst := m.Target(home)
		source := m.Source
		if ctr != nil && m.Kind == Bind && m.HomeRel == "" && m.Dest == p.User.HostHome && m.Source == p.SandboxHome {
			// The sandbox home, at the container's home (isolator.VisibleMounts).
			dst = home
			if ctr.Volume {
				source = ""
				m.Why += " (an engine volume: no host file)"
			}
		}
		if !path.IsAbs(dst) {
			v.err = fmt.Errorf("mount %q (%s) has no absolute destination: %w", dst, m.Why, ErrOutsideView)
			continue
		}
		switch m.Kind {
		case Bind:
			a := writable
			if m.ReadOnly {
				a = readOnly
				roBinds = append(roBinds, len(v.entries))
			}
			add(dst, source, a, m.Why)
		case MaskFile, MaskDir:
			add(dst, "", masked, m.Why)
		case TmpDir:
			add(dst, "", writable, m.Why)
		case Data:
			add(dst, "", readOnly, m.Why)
		default:
			v.err = fmt.Errorf("mount %s: unknown kind %d: %w", dst, m.Kind, ErrOutsideView)
		}
	}
	for _, s := range p.Secrets {
		if s.AsFile {
			add(s.SecretPath(), "", masked, "secret file")
		}
	}
	if v.err == nil {
		v.guards = v.guardIDs(roBinds)
	}
	return v
}

// CheckRead returns nil when the sandbox lets a process read name, an absolute
// in-sandbox path; else an error wrapping ErrOutsideView, ErrMasked or ErrInvalidPath.
// A tool that walks a directory must check each path it opens below it.
//
// CheckRead judges by name only, as the tree is when it looks: it is not safe to
// open the path afterwards while the sandbox runs (the sandbox can swap a checked
// directory for a symlink, rename a directory holding a mask, link a protected
// file under another name). A file tool opens with Open, which checks and opens in
// one step; CheckRead is for questions about the policy (may the agent name this
// path at all?) and for a sandbox that is not running.
func (v *View) CheckRead(name string) error {
	_, err := v.check(name, false)
	return err
}

// CheckWrite returns nil when the sandbox lets a process create, write, remove or
// rename name; else an error wrapping ErrOutsideView, ErrMasked, ErrReadOnly or
// ErrInvalidPath. Check the path being created, not its directory: a directory holding
// a read-only or masked mount is denied, because on the host, renaming or removing it
// would carry what the mount protects away from the protection.
//
// Like CheckRead, CheckWrite judges by name only and is not safe to act on while
// the sandbox runs: write through Open, which checks for writing and opens in one
// step.
func (v *View) CheckWrite(name string) error {
	_, err := v.check(name, true)
	return err
}

// HostPath returns the host path showing what the sandbox sees at name, with symlinks
// resolved as in the sandbox: $HOME/notes is below Plan.SandboxHome, a home-relative
// binding is its host source, a project path is itself. It fails as CheckRead does,
// and with ErrNoHostPath where no host file backs the path (a tmpfs, a generated
// file, /tmp before Run chose the session dir). It does not check for writing.
//
// HostPath judges by name only: the path it returns is not safe to open while the
// sandbox runs (the sandbox can link a directory on it elsewhere after the check,
// or have moved a mask's file to it), and O_NOFOLLOW guards only the last
// component. It is for messages and for a sandbox that is not running.
//
// Deprecated: a file tool opens with Open, which checks and opens in one step;
// HostPath followed by os.Open or os.OpenFile is the race Open closes.
func (v *View) HostPath(name string) (string, error) {
	r, err := v.check(name, false)
	if err != nil {
		return "", err
	}
	e := v.lookup(r)
	if e.source == "" {
		return "", fmt.Errorf("%s: %w (%s)", r, ErrNoHostPath, e.why)
	}
	return e.hostPath(r), nil
}

// check validates, cleans and resolves p, and returns the resolved in-sandbox path when
// both it and the cleaned path allow the access.
func (v *View) check(p string, write bool) (string, error) {
	if v.err != nil {
		return "", fmt.Errorf("%s: %w", p, v.err)
	}
	if len(v.entries) == 0 {
		return "", fmt.Errorf("%s: %w: the View was not made by isolator.ViewOf, so it knows no sandbox", p, ErrOutsideView)
	}
	if !path.IsAbs(p) {
		return "", fmt.Errorf("%q: %w: not absolute", p, ErrInvalidPath)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("%q: %w: contains a NUL byte", p, ErrInvalidPath)
	}
	clean := path.Clean(p)
	if err := v.decide(clean, write); err != nil {
		return "", fmt.Errorf("%s: %w", clean, err)
	}
	r, err := v.resolve(clean)
	if err != nil {
		return "", fmt.Errorf("%s: %w", clean, err)
	}
	if r != clean {
		if err := v.decide(r, write); err != nil {
			return "", fmt.Errorf("%s (resolves to %s): %w", clean, r, err)
		}
	}
	return r, nil
}

// decide applies the entry deciding the clean path p.
func (v *View) decide(p string, write bool) error {
	i := v.index(p)
	e := v.entries[i]
	switch {
	case e.access == hidden:
		return ErrOutsideView
	case e.access == masked:
		return fmt.Errorf("%w (%s)", ErrMasked, e.why)
	case e.access == readOnly && write:
		return fmt.Errorf("%w (%s)", ErrReadOnly, e.why)
	case write:
		// Entries before i below p are covered by e; later ones are still in effect.
		for _, b := range v.entries[i+1:] {
			if Within(b.target, p) && (b.access == readOnly || b.access == masked) {
				return fmt.Errorf("%w: holds %s (%s)", ErrReadOnly, b.target, b.why)
			}
		}
	}
	return nil
}

// index returns the index of the last entry at or above the clean path p: the entry
// deciding it. The root entry is at or above every path.
func (v *View) index(p string) int {
	for i := len(v.entries) - 1; i > 0; i-- {
		if Within(p, v.entries[i].target) {
			return i
		}
	}
	return 0
}

// lookup returns the entry deciding the clean path p.
func (v *View) lookup(p string) entry { return v.entries[v.index(p)] }

// resolve follows symlinks in the clean absolute path p as the sandbox would, and
// returns the result: clean, absolute, with no symlink the view can see.
func (v *View) resolve(p string) (string, error) {
	dest, rest, links := "/", p, 0
	for rest != "" {
		var name string
		name, rest, _ = strings.Cut(rest, "/")
		switch name {
		case "", ".":
			continue
		case "..":
			dest = path.Dir(dest)
			continue
		}
		cand := path.Join(dest, name)
		target, isLink, err := v.readlink(cand)
		if err != nil {
			return "", err
		}
		if !isLink {
			dest = cand
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("too many levels of symbolic links: %w", ErrOutsideView)
		}
		if path.IsAbs(target) {
			dest = "/"
		}
		rest = target + "/" + rest
	}
	return dest, nil
}

// readlink reports whether the in-sandbox path p (whose parent is resolved) is a
// symlink in the sandbox, and its target.
func (v *View) readlink(p string) (string, bool, error) {
	i := v.index(p)
	e := v.entries[i]
	if e.target == p {
		// A mount point shows what was mounted (bwrap resolves sources); only a
		// system path recreated as a symlink is one.
		return e.link, e.link != "", nil
	}
	if e.source == "" {
		return "", false, nil // nothing the host could show: a tmpfs, a file, hidden
	}
	target, err := v.Readlink(e.hostPath(p))
	if err != nil || target == "" {
		return "", false, nil
	}
	for _, m := range v.entries[i+1:] { // earlier ones below p are covered by e
		if Within(m.target, p) {
			// bwrap followed this symlink when it mounted below it: the mount is
			// somewhere the table does not say.
			return "", false, fmt.Errorf("%s is a symlink with a mount below it: %w", p, ErrOutsideView)
		}
	}
	return target, true, nil
}

// hostPath returns the host path of the in-sandbox path p, at or below e.target.
func (e entry) hostPath(p string) string {
	if e.target == "/" {
		return path.Join(e.source, p)
	}
	return path.Join(e.source, strings.TrimPrefix(p, e.target))
}
