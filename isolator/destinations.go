package isolator

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// CheckDestinations refuses mount destinations reached through a symlink in the
// persistent sandbox home or the project: bwrap follows them, so a link a previous
// session planted (~/.ssh -> elsewhere) would redirect a mask or a bind, or have bwrap
// create files at a host path of the sandbox's choosing. Every isolator's launch runs it
// (the CLI does, before Run).
func CheckDestinations(p *Plan) error {
	home := p.User.HostHome
	for _, m := range p.Mounts {
		dst := m.Target(home)
		var root, hostPath string
		switch {
		case Within(dst, p.Project.Dir):
			root, hostPath = p.Project.Dir, dst
		case dst != home && Within(dst, home) && m.Why != "sandbox home":
			root, hostPath = p.SandboxHome, filepath.Join(p.SandboxHome, strings.TrimPrefix(dst, home+"/"))
		default:
			continue
		}
		if q := SymlinkIn(hostPath, root, os.Lstat); q != "" {
			return fmt.Errorf("%w: %s is a symlink, and the sandbox mounts %s through it (%s); remove the link (a sandboxed program may have planted it)", ErrProtection, q, dst, m.Why)
		}
	}
	return nil
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
func RecordProject(p *Plan) {
	if p.SandboxHome == "" || p.Project.Dir == "" {
		return
	}
	path := filepath.Join(filepath.Dir(p.SandboxHome), "project")
	want := p.Project.Dir + "\n"
	if b, err := os.ReadFile(path); err == nil && string(b) == want {
		return
	}
	_ = os.WriteFile(path, []byte(want), 0o600)
}

// EnsureEmptyFile creates the empty read-only file file masks are bound from (the
// Plan's EmptyFile), or checks that the one there is still empty and regular: a mask
// bound from anything else would show its content. Every isolator calls it before
// launch.
func EnsureEmptyFile(path string) error {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().IsRegular() && fi.Size() == 0 {
			return nil
		}
		return fmt.Errorf("%w: %s, the source of file masks, is not an empty regular file; remove it", ErrProtection, path)
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
