package isolator

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// CheckDestinations refuses mount destinations reached through a symlink in a host
// directory the sandbox can write (DestinationChecks): bubblewrap before 0.12
// (CVE-2026-87766) creates a missing mount point, and the directories on the way to
// it, by following links, so a link a previous or concurrent session planted
// (~/.config -> /oldroot/home/USER/.config) would have it create directories and
// empty files at a host path of the sandbox's choosing, before the sandbox starts; a
// link also redirects a mask or a bind. Every isolator's launch runs it (PrepareHost).
// A link swapped in after the check (by a session running concurrently) is not
// caught: see docs/security-model.md.
func CheckDestinations(p *Plan) error {
	seen := map[string]fs.FileInfo{}
	lstat := func(q string) (fs.FileInfo, error) {
		if fi, ok := seen[q]; ok {
			return fi, nil
		}
		fi, err := os.Lstat(q)
		if err == nil {
			seen[q] = fi
		}
		return fi, err
	}
	for _, c := range DestinationChecks(p) {
		if q := SymlinkIn(c.Host, c.Root, lstat); q != "" {
			return fmt.Errorf("%w: %s is a symlink, and the sandbox mounts %s (%s) through it, inside %s; bubblewrap before 0.12 would create the mount point where the link leads (CVE-2026-87766); remove the link (a sandboxed program may have planted it)",
				ErrProtection, q, c.Dest, c.Why, c.In)
		}
	}
	return nil
}

// DestCheck is one mount destination whose creation goes through a host directory
// the sandbox can write: no component of Host below Root may be a symlink.
type DestCheck struct {
	Dest string // the destination in the sandbox
	Why  string // the mount's Why (the binding or config key)
	// Host is the host path behind the view at Dest before the mount: Root's part
	// of the path, below the bind the destination lies in.
	Host string
	// Root is that bind's source, or the directory of Writable(p) holding Host when
	// the bind's source lies above it.
	Root string
	In   string // the bind the destination lies in, for people: "sandbox home (SOURCE)"
}

// DestinationChecks returns, for each destination of p (its mounts in order, then
// the secret files and the init), what must be checked on the host before launch.
// It is pure. A destination lies in the last mount placed before it at or above its
// path (or in bwrap's fresh root, /dev, /proc, /run, the new session /tmp, the
// system directories); only a host bind whose source the sandbox can write (see
// Writable) gives a check. Nothing is created at a destination a bind is already at,
// and a destination in a tmpfs is in one made fresh at launch.
func DestinationChecks(p *Plan) []DestCheck {
	home := p.User.HostHome
	writable := Writable(p)
	type layer struct{ dest, host, why string }
	// What lies below the Plan's mounts: bwrap's fresh root or the host's, the
	// system directories (the host's), /dev, /proc, /run and /tmp (a tmpfs, or a
	// session directory made at launch, out of other sessions' view).
	layers := []layer{{dest: "/"}}
	if p.System.Host {
		layers[0] = layer{dest: "/", host: "/", why: "the host's root"}
	}
	for _, sp := range p.System.Paths {
		l := layer{dest: sp.Path}
		if sp.Link == "" && !sp.Copy {
			l.host, l.why = sp.Path, "system directory"
		}
		layers = append(layers, l)
	}
	for _, d := range []string{"/dev", "/proc", "/run", "/tmp"} {
		layers = append(layers, layer{dest: d})
	}
	var out []DestCheck
	check := func(dst, why string) {
		in := -1
		for i, l := range layers {
			if Within(dst, l.dest) {
				in = i
			}
		}
		if in < 0 || layers[in].host == "" || layers[in].dest == dst {
			return
		}
		l := layers[in]
		host := filepath.Join(l.host, strings.TrimPrefix(dst, strings.TrimSuffix(l.dest, "/")+"/"))
		root := ""
		for _, w := range writable {
			if Within(l.host, w) {
				root = l.host
				break
			}
			if Within(host, w) && len(w) > len(root) {
				root = w
			}
		}
		if root != "" && host != root {
			out = append(out, DestCheck{Dest: dst, Why: why, Host: host, Root: root, In: l.why + " (" + l.host + ")"})
		}
	}
	for _, m := range p.Mounts {
		dst := m.Target(home)
		check(dst, m.Why)
		l := layer{dest: dst, why: m.Why}
		if m.Kind == Bind {
			l.host = m.Source
		}
		layers = append(layers, l)
	}
	for _, s := range p.Secrets {
		if s.AsFile {
			check(s.SecretPath(), "secret "+s.Name)
		}
	}
	check(InitPath, "the init")
	return out
}

// SymlinkIn returns the first symlink among p and its parents strictly below root
// (both clean absolute paths; root "/" checks every component but "/"), read with
// lstat, or "" when there is none. Components that do not exist are not links. It is
// the one check behind "no bind source or destination is reached through a link".
func SymlinkIn(p, root string, lstat func(string) (fs.FileInfo, error)) string {
	var chain []string
	for q := p; q != root && q != "/" && Within(q, root); q = filepath.Dir(q) {
		chain = append(chain, q)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		fi, err := lstat(chain[i])
		if err != nil {
			return ""
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return chain[i]
		}
	}
	return ""
}

// PrepareHost creates what a Plan's mounts need on the host before their sources are
// opened: the sandbox home and other private directories, and the empty file masks
// are bound from; it refuses destinations reached through a symlink. It records the
// project's directory beside the sandbox home (RecordProject).
func PrepareHost(p *Plan) error {
	for _, d := range p.PrivateDirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	RecordProject(p)
	if err := CheckDestinations(p); err != nil {
		return err
	}
	return EnsureEmptyFile(p.EmptyFile)
}

// RecordProject writes the project's directory to the file "project" beside the
// sandbox home (outside the sandbox's view), where `devsandbox sandboxes list` and
// `prune` find which project a sandbox home belongs to and whether it is gone. It
// writes only when the file is missing or names another directory, and a failure
// costs only that: the record is a convenience, never trusted for a removal's path.
// What it writes, and the read-write binds of p outside the project (the record
// "binds" beside it), it appends to the index of what sandboxes write
// (WrittenIndex), which SandboxWritten reads: a launch with the same project and
// binds as the last one reads the records and writes nothing. The index is
// appended to first, and the records written only when that took: a record whose
// lines the index lacks would keep the next launches from appending them.
func RecordProject(p *Plan) {
	if p.SandboxHome == "" || p.Project.Dir == "" {
		return
	}
	type record struct{ path, want string }
	var changed []record
	var lines []string
	dir := filepath.Dir(p.SandboxHome)
	project := record{filepath.Join(dir, "project"), p.Project.Dir + "\n"}
	if b, err := os.ReadFile(project.path); err != nil || string(b) != project.want {
		changed = append(changed, project)
		lines = append(lines, projectLine(p.Project.Dir))
	}
	data, state := planRoots(p)
	if filepath.Dir(dir) == data {
		if binds := rwBindLines(p, data, state); len(binds) > 0 {
			r := record{filepath.Join(dir, bindsRecord), strings.Join(binds, "")}
			if b, err := os.ReadFile(r.path); err != nil || string(b) != r.want {
				changed = append(changed, r)
				lines = append(lines, binds...)
			}
		}
		if len(lines) > 0 && !recordWritten(data, lines) {
			return
		}
	} // else a library's layout: no index of devsandbox's is read for it
	for _, r := range changed {
		_ = replaceFile(r.path, r.want) // other launches read it: never a part
	}
}

// EnsureEmptyFile creates the empty read-only file file masks are bound from (the
// Plan's EmptyFile), or checks that the one there is still empty and regular: a mask
// bound from anything else would show its content. Every isolator calls it before
// launch.
func EnsureEmptyFile(path string) error {
	if fi, err := os.Lstat(path); err == nil {
		return emptyFile(path, fi)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444)
	if err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating the mask source %s: %w", path, err)
	}
	if f != nil {
		f.Close()
	}
	return nil
}

// Writable returns the host directories whose contents the sandbox of p can change:
// the project (its .git stays writable even with read_only), the sandbox home,
// every read-write bind source and the directories Run creates for it. A symlink
// found in one of them may have been planted; package pin refuses to follow it.
func Writable(p *Plan) []string {
	roots := []string{p.Project.Dir, p.SandboxHome}
	if p.Tmp.Dir != "" {
		roots = append(roots, p.Tmp.Dir)
	}
	roots = append(roots, p.PrivateDirs...)
	for _, m := range p.Mounts {
		if m.Kind == Bind && !m.ReadOnly {
			roots = append(roots, m.Source)
		}
	}
	if p.Egress.SocketDir != "" {
		roots = append(roots, p.Egress.SocketDir)
	}
	return roots
}

// CheckEmptyFile is EnsureEmptyFile's refusal without its effect (for --dry-run): a
// file at path that is not empty and regular is refused; a missing one, which a
// launch creates, is not.
func CheckEmptyFile(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil
	}
	return emptyFile(path, fi)
}

// emptyFile refuses fi, the lstat of the mask source path, unless it is an empty
// regular file: a mask bound from anything else would show its content.
func emptyFile(path string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() && fi.Size() == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s, the source of file masks, is not an empty regular file; remove it", ErrProtection, path)
}
