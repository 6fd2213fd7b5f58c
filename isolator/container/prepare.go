package container

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// Prepare creates what the container binds from the host besides the generated
// files: the private directories and the mask source; and drops the optional binds
// whose source is gone, with their checks, so the manifest a backend renders is the
// one in force. The backend translates the layout next, then calls WriteFiles.
func (l *Layout) Prepare() error {
	for _, d := range l.Dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	if l.EmptyFile != "" {
		if err := isolator.EnsureEmptyFile(l.EmptyFile); err != nil {
			return err
		}
	}
	l.dropMissing(func(p string) bool { _, err := os.Stat(p); return err == nil })
	return nil
}

// WriteFiles writes the generated host files, those the backend's translation added
// (File) included.
func (l *Layout) WriteFiles() error {
	for _, f := range l.Files {
		if err := writeHostFile(f); err != nil {
			return err
		}
	}
	return nil
}

// writeHostFile writes f unless it holds its content already: atomically (a new file
// renamed over), or for an InPlace file by rewriting it.
func writeHostFile(f HostFile) error {
	if b, err := os.ReadFile(f.Path); err == nil && string(b) == string(f.Content) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(f.Path), err)
	}
	if f.InPlace {
		if err := os.WriteFile(f.Path, f.Content, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", f.Path, err)
		}
		return nil
	}
	tmp := f.Path + ".tmp" + randomSuffix()
	if err := os.WriteFile(tmp, f.Content, 0o444); err != nil {
		return fmt.Errorf("writing %s: %w", f.Path, err)
	}
	if err := os.Rename(tmp, f.Path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", f.Path, err)
	}
	return nil
}

// dropMissing removes the optional binds whose source does not exist, and their
// checks from the manifests.
func (l *Layout) dropMissing(exists func(string) bool) {
	gone := map[string]bool{}
	l.Mounts = slices.DeleteFunc(l.Mounts, func(m Mount) bool {
		if m.Type == Bind && m.Optional && !exists(m.Source) {
			gone[m.Target] = true
			return true
		}
		return false
	})
	if len(gone) == 0 {
		return
	}
	for _, man := range []*wire.Manifest{l.Manifest, l.Session} {
		if man != nil {
			man.Checks = slices.DeleteFunc(slices.Clone(man.Checks), func(c wire.Check) bool { return gone[c.Path] })
		}
	}
}

// MakeMountPoints creates, as the user, the mount points that lie inside a read-write
// bind of a host directory (the sandbox home, the project) and do not exist yet. An
// engine that runs as root would create them as root, leaving the user files in their
// own home they cannot remove. The directories on the way are opened (and made) from
// the bind's source one at a time without following a symlink: a path with a symlink
// on the way, one found at launch or one a concurrent session of the project swaps in
// after the launch's check (isolator.CheckDestinations), is left to the engine, which
// resolves it inside the container's root. Nothing is created at a host path a link
// names. WriteMountPoints writes the same for a --dry-run script.
func (l *Layout) MakeMountPoints() {
	for _, mp := range l.mountPoints() {
		dir := mp.source == ""
		if !dir {
			fi, err := os.Stat(mp.source)
			dir = err == nil && fi.IsDir()
		}
		makeMountPoint(mp.root, mp.rel, dir)
	}
}

// mountPoint is a mount's target that lies inside a read-write bind of a host
// directory, with the host path that backs it.
type mountPoint struct {
	host      string // root joined with rel
	root, rel string // the bind's host directory and the path below it
	source    string // the mount's source when it is a bind (a directory or a file); "" otherwise (a directory)
}

// mountPoints lists l's mount points that lie inside a read-write bind, by target.
// Pure.
func (l *Layout) mountPoints() []mountPoint {
	ms := slices.Clone(l.Mounts)
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].Target < ms[j].Target })
	var out []mountPoint
	for _, m := range ms {
		root, rel := l.hostPathOf(m.Target)
		if root == "" {
			continue
		}
		mp := mountPoint{host: filepath.Join(root, rel), root: root, rel: rel}
		if m.Type == Bind {
			mp.source = m.Source
		}
		out = append(out, mp)
	}
	return out
}

// makeMountPoint creates rel (a clean relative path) below the host directory root,
// as a directory when dir, else as an empty file, with its missing parents: each
// reached through a descriptor, never through a symlink. Any failure leaves it
// uncreated.
func makeMountPoint(root, rel string, dir bool) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	// root is a bind's source: the project, the sandbox home, or a directory below
	// one of them bound again (a mask's anchor), which a concurrent session can
	// swap for a link after the launch's check. Its last component is not followed
	// either; a root that is a link is left to the engine, like a link on the way.
	fd, err := unix.Open(root, flags, 0)
	if err != nil {
		return
	}
	parts := strings.Split(rel, "/")
	for _, c := range parts[:len(parts)-1] {
		next, err := unix.Openat(fd, c, flags, 0)
		if errors.Is(err, unix.ENOENT) && unix.Mkdirat(fd, c, 0o755) == nil {
			next, err = unix.Openat(fd, c, flags, 0)
		}
		unix.Close(fd)
		if err != nil {
			return // a symlink, a non-directory, or not ours to enter
		}
		fd = next
	}
	defer unix.Close(fd)
	last := parts[len(parts)-1]
	var st unix.Stat_t
	if unix.Fstatat(fd, last, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		return
	}
	if dir {
		_ = unix.Mkdirat(fd, last, 0o755)
	} else if f, err := unix.Openat(fd, last, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644); err == nil {
		unix.Close(f)
	}
}

// hostPathOf returns the host directory and the path below it that back target: the
// deepest mount strictly above it must be a read-write bind, else "".
func (l *Layout) hostPathOf(target string) (root, rel string) {
	best, bestSrc := "", ""
	for _, m := range l.Mounts {
		if m.Target != target && isolator.Within(target, m.Target) && len(m.Target) > len(best) {
			best, bestSrc = m.Target, ""
			if m.Type == Bind && !m.ReadOnly {
				bestSrc = m.Source
			}
		}
	}
	if bestSrc == "" {
		return "", ""
	}
	return bestSrc, strings.TrimPrefix(strings.TrimPrefix(target, best), "/")
}

// Hello reads the secret values p names, for the session's Hello frame. The command
// gets one stream for stdout and stderr (OneStream) when the run is not on a
// terminal of its own and stdio's two are one destination (isolator.SharedOutput):
// the order between them is then the command's, which the engine's two streams would
// not keep.
func Hello(p *isolator.Plan, stdio isolator.Stdio) (*wire.Hello, error) {
	h := &wire.Hello{Jobs: wire.JobProtocol, TTY: p.TTY, OneStream: !p.TTY && isolator.SharedOutput(stdio.Out, stdio.Err)}
	if p.Limits.Memory > 0 {
		h.Nonce = newNonce()
	}
	for _, sec := range p.Secrets {
		var val []byte
		switch {
		case sec.FileSource != "":
			b, err := os.ReadFile(sec.FileSource)
			if err != nil {
				return nil, fmt.Errorf("%w: reading the secret file for %s: %w", isolator.ErrProtection, sec.Name, err)
			}
			val = b
		default:
			v, ok := p.HostEnv[sec.EnvSource]
			if !ok {
				return nil, fmt.Errorf("%w: secret %s: the host variable %s is not set", isolator.ErrProtection, sec.Name, sec.EnvSource)
			}
			val = []byte(v)
		}
		if sec.AsFile {
			if h.Files == nil {
				h.Files = map[string][]byte{}
			}
			h.Files[sec.Name] = val
			continue
		}
		if h.Env == nil {
			h.Env = map[string]string{}
		}
		h.Env[sec.Name] = string(val)
	}
	return h, nil
}

// RandomSuffix is eight random hex digits, for the names of one-shot containers and
// temporary files.
func RandomSuffix() string { return randomSuffix() }

func randomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// NewNonce returns a random session nonce for wire.Hello.Nonce (here, not in wire,
// which the init links: crypto/rand's package init would run on every launch).
func NewNonce() string { return newNonce() }

func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
