// Package pin opens the host files a Plan binds into a sandbox, once each, before the
// sandbox is set up, so that what is mounted is what was checked (guarantee 12).
//
// Every source is opened from the root directory one component at a time, each
// without following a symbolic link (O_PATH|O_NOFOLLOW on Linux). A symlink found on
// the way is followed only when the directory holding it lies outside every directory
// the sandbox can write (isolator.Writable, the untrusted roots): a dotfile link the
// user made in their home is fine, a link in the project, the sandbox home or a
// read-write bind may have been planted by an earlier session, or be planted by a
// concurrent one while this one starts, and stops the launch. The descriptor that
// results is the source: bwrap mounts it (--bind-fd), and every backend's init
// compares the device and inode numbers of what it finds at the destination with the
// pinned ones (isolator.Mount.ID), reaching it without following a symlink either, so
// a destination redirected through a swapped directory is caught too.
//
// The plan-time rules about which sources are acceptable at all (a user's mount that
// names a hidden path, a tool's state directory) are the Plan builder's; this package
// enforces, at mount time, that nothing changed under them since.
package pin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator"
)

// ErrUntrustedLink is wrapped by the error for a symlink in a directory the sandbox can
// write, on the way to a bind source.
var ErrUntrustedLink = errors.New("a symlink where the sandbox can write")

// Source is one pinned file.
type Source struct {
	// File is the O_PATH descriptor on Linux (nil elsewhere); bwrap mounts it.
	File *os.File
	ID   isolator.FileID
	Dir  bool
	path string // the path walked (for messages; read by path where no descriptor is held)
}

// Close releases the descriptor.
func (s *Source) Close() {
	if s != nil && s.File != nil {
		s.File.Close()
	}
}

// Set is the pinned sources of a Plan's mounts.
type Set struct {
	// Sources are indexed like the Plan's Mounts: each Bind's source, nil for other
	// kinds and for an optional source that is gone.
	Sources []*Source
	// Empty is the source of file masks (Plan.EmptyFile).
	Empty *Source
	plan  *isolator.Plan
	// vanished marks, by index in the Plan's Mounts, the optional file masks whose
	// host file (a host service's socket, the mask's Source) was gone when the Set
	// was made: Apply drops them. masked are the host files of the others.
	vanished map[int]bool
	masked   []string
}

// Plan pins the source of every Bind of p and the mask source. A non-optional source
// that is missing, or that can be reached only through a symlink in one of p's
// writable directories, fails with isolator.ErrProtection. The caller closes the Set
// once the sandbox has mounted them (or will not).
func Plan(p *isolator.Plan) (*Set, error) {
	w := newWalker(&roots{resolve: func() []string { return untrusted(p) }})
	defer w.close()
	s := &Set{Sources: make([]*Source, len(p.Mounts)), plan: p}
	for i, m := range p.Mounts {
		if vanishes(m) {
			// A socket gone since the Plan was built leaves nothing to connect to:
			// its mask's destination is gone too, and bubblewrap cannot create one
			// in a read-only view. One that comes back (a service restarting) is
			// not masked, as one that does so while the sandbox runs is not.
			if _, err := os.Lstat(m.Source); errors.Is(err, os.ErrNotExist) {
				if s.vanished == nil {
					s.vanished = map[int]bool{}
				}
				s.vanished[i] = true
			} else {
				s.masked = append(s.masked, m.Source)
			}
			continue
		}
		if m.Kind != isolator.Bind {
			continue
		}
		src, err := w.open(m.Source)
		if errors.Is(err, os.ErrNotExist) && m.Optional {
			continue
		}
		if err != nil {
			s.Close()
			return nil, sourceError(p, m, err)
		}
		s.Sources[i] = src
	}
	if p.EmptyFile != "" {
		src, err := w.open(p.EmptyFile)
		if err != nil {
			s.Close()
			return nil, emptyError(err)
		}
		s.Empty = src
	}
	return s, nil
}

// vanishes reports whether m is a file mask that is dropped when the host file it
// masks (its Source) is gone at launch.
func vanishes(m isolator.Mount) bool {
	return m.Kind == isolator.MaskFile && m.Optional && m.Source != ""
}

func sourceError(p *isolator.Plan, m isolator.Mount, err error) error {
	return fmt.Errorf("%w: the source of the mount at %s (%s): %w", isolator.ErrProtection, m.Target(p.User.HostHome), m.Why, err)
}

func emptyError(err error) error {
	return fmt.Errorf("%w: the source of file masks: %w", isolator.ErrProtection, err)
}

// Check makes, for --dry-run, the refusals of a launch's host preparation
// (isolator.PrepareHost) and of Plan, in the same words, without their effects: a
// mount destination reached through a symlink in a directory the sandbox can write
// (isolator.CheckDestinations), a mask source that is not an empty regular file, a
// bind source reached only through such a symlink, or missing. It creates nothing and
// keeps nothing open, so what a launch creates may be missing: p's PrivateDirs and
// what lies in them (the sandbox home on a first run), and the mask source. A launch
// can still stop where Check passed (a link planted since, a file missing from a
// directory the launch creates).
func Check(p *isolator.Plan) error {
	if err := isolator.CheckDestinations(p); err != nil {
		return err
	}
	if err := isolator.CheckEmptyFile(p.EmptyFile); err != nil {
		return err
	}
	w := newWalker(&roots{resolve: func() []string { return untrusted(p) }})
	defer w.close()
	made := func(path string) bool {
		for _, d := range p.PrivateDirs {
			if isolator.Within(path, d) {
				return true
			}
		}
		return false
	}
	for _, m := range p.Mounts {
		if m.Kind != isolator.Bind {
			continue
		}
		src, err := w.open(m.Source)
		if errors.Is(err, os.ErrNotExist) && (m.Optional || made(m.Source)) {
			continue
		}
		if err != nil {
			return sourceError(p, m, err)
		}
		src.Close()
	}
	if p.EmptyFile != "" {
		src, err := w.open(p.EmptyFile)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return emptyError(err)
		}
		src.Close()
	}
	return nil
}

// Apply returns a copy of the Plan with each mount's ID set from its pinned source
// (masks: the mask source's) and without the optional mounts whose source is gone;
// index maps each mount of the copy to its index in the pinned Plan.
func (s *Set) Apply() (p *isolator.Plan, index []int) {
	cp := *s.plan
	cp.Mounts = nil
	for i, m := range s.plan.Mounts {
		switch {
		case m.Kind == isolator.Bind && s.Sources[i] == nil, s.vanished[i]:
			continue // optional, gone
		case m.Kind == isolator.Bind:
			id := s.Sources[i].ID
			m.ID = &id
		case m.Kind == isolator.MaskFile && s.Empty != nil:
			id := s.Empty.ID
			m.ID = &id
		}
		cp.Mounts = append(cp.Mounts, m)
		index = append(index, i)
	}
	return &cp, index
}

// Close releases every descriptor.
func (s *Set) Close() {
	for _, src := range s.Sources {
		src.Close()
	}
	s.Empty.Close()
}

// untrusted returns the real paths of p's writable directories: a path is compared
// with them after every symlink before it was followed.
func untrusted(p *isolator.Plan) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range isolator.Writable(p) {
		// Writable names a directory once per reason (the sandbox home as a private
		// directory and a read-write bind, say): each is resolved once.
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		out = append(out, d)
		if r, err := filepath.EvalSymlinks(d); err == nil && r != d {
			out = append(out, r)
		}
	}
	return out
}

// roots are the untrusted directories of a walk, worked out when a symlink on the
// way to a source first asks (only a symlink's directory is compared with them): on
// most launches no source is reached through one, and resolving the writable
// directories is an lstat of every component of each. The answer is the one an
// earlier resolution would have given, from the file system as it is when the link
// is met.
type roots struct {
	list    []string
	resolve func() []string // when set, makes list on first use
}

func (r *roots) get() []string {
	if r.resolve != nil {
		r.list, r.resolve = r.resolve(), nil
	}
	return r.list
}

// within reports whether dir is one of roots or below one.
func within(dir string, roots []string) bool {
	for _, r := range roots {
		if isolator.Within(dir, r) {
			return true
		}
	}
	return false
}

// maxLinks is how many symlinks one path may cross, as Linux's MAXSYMLINKS.
const maxLinks = 40

// OpenIn pins one path with p's writable directories untrusted, as Plan does.
func OpenIn(p *isolator.Plan, path string) (*Source, error) {
	w := newWalker(&roots{resolve: func() []string { return untrusted(p) }})
	defer w.close()
	return w.open(path)
}

// Open pins one path with no untrusted directories other than those given.
func Open(path string, untrusted []string) (*Source, error) {
	w := newWalker(&roots{list: untrusted})
	defer w.close()
	return w.open(path)
}

// BootID returns this host's boot id ("" where there is none): the sandbox's init
// compares the pinned identities only on the kernel that has it (wire.Manifest.BootID).
// It is read with the system calls themselves: os.ReadFile registers the file with the
// runtime's poller and asks for its size, eight calls for one 37-byte read.
func BootID() string {
	fd, err := unix.Open("/proc/sys/kernel/random/boot_id", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	var b [64]byte
	n := 0
	for n < len(b) {
		m, err := unix.Read(fd, b[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return ""
		}
		if m == 0 {
			break
		}
		n += m
	}
	return strings.TrimSpace(string(b[:n]))
}

// Anchors returns, by source path, the pinned directories of the Plan's anchors
// (isolator.Mount.Anchor): what a backend has the engine bind instead of the path.
func (s *Set) Anchors() map[string]*Source {
	out := map[string]*Source{}
	for i, m := range s.plan.Mounts {
		if m.Kind == isolator.Bind && m.Anchor && s.Sources[i] != nil && s.Sources[i].Dir {
			out[m.Source] = s.Sources[i]
		}
	}
	return out
}

// ProcPath is the path of the pinned file through this process's descriptor
// (/proc/PID/fd/N), for a mounter that shares this process's mount namespace: it
// reaches the file opened, whatever happened to its name since. Empty without a
// descriptor.
func (s *Source) ProcPath() string {
	if s == nil || s.File == nil {
		return ""
	}
	return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), s.File.Fd())
}
