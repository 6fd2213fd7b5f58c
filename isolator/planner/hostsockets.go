package planner

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/devsandbox/devsandbox/isolator"
)

// ownTrees are the directories every view gives the sandbox of its own: a socket
// whose file lies there is not the host's in the sandbox.
var ownTrees = []string{"/dev", "/proc", "/run", "/tmp"}

// procNetUnix is Probe.UnixSockets on the host: the paths of the Unix sockets bound
// in devsandbox's network namespace, as /proc/net/unix names them.
func procNetUnix() ([]string, error) {
	data, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return nil, err
	}
	return parseProcNetUnix(data), nil
}

// parseProcNetUnix returns the absolute paths of /proc/net/unix's sockets, each once,
// in the order listed: abstract sockets ("@name"), unbound ones and relative paths
// (bound relative to a directory that is not known here) are left out. A line is
// "Num: RefCount Protocol Flags Type St Inode Path": the path is what follows the
// seventh field and one space (it may hold spaces itself).
func parseProcNetUnix(data []byte) []string {
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for first := true; sc.Scan(); first = false {
		line := sc.Bytes()
		if first {
			continue // the header
		}
		rest := line
		for range 7 {
			rest = bytes.TrimLeft(rest, " ")
			i := bytes.IndexByte(rest, ' ')
			if i < 0 {
				rest = nil
				break
			}
			rest = rest[i:]
		}
		if len(rest) < 2 || rest[0] != ' ' || rest[1] != '/' {
			continue
		}
		p := filepath.Clean(string(rest[1:]))
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// maskHostSockets masks the host's bound Unix sockets socks (the paths /proc/net/unix
// names) wherever the view shows them: at their own path when the system view
// (system_binds = ["host"], a system bind) shows it, and at their place in each of
// the user's binds that holds them. A read-only mount does not stop connect(2), and a
// service's socket outside /run (MySQL's, a snap's, a VM manager's under /var/lib,
// /srv, /opt) cannot be known by name. Left shown: sockets in the sandbox's own
// trees and the project, those keep reports (the engines sandbox.docker_socket
// shares), and a socket a user bind names itself — the way to share one. A socket
// that is gone or cannot be reached by the user is skipped: the sandbox could not
// connect to it either.
//
// /proc/net/unix names the path a socket was bound at, not the names it has now, so
// two more kinds of path are masked: every socket in the directory of a listed one
// (a socket bound at a temporary name and renamed into place, a hard link beside it,
// one bound in another network namespace), and every other path the mount table
// gives such a socket (its directory bind-mounted elsewhere on the host).
func (b *mountBuilder) maskHostSockets(socks []string, keep func(string) bool, project string) error {
	done := map[string]bool{}
	for _, m := range b.mounts {
		if (m.Kind == isolator.MaskFile || m.Kind == isolator.MaskDir) && m.HomeRel == "" {
			done[m.Dest] = true
		}
	}
	mask := func(dst, src, why string) error {
		if done[dst] {
			return nil
		}
		done[dst] = true
		if err := b.anchor(dst, "the host sockets' mask", true); err != nil {
			return err
		}
		// A service's socket comes and goes: one gone (src, its host path) by the
		// time the sandbox starts leaves nothing to mask (Optional: the backend
		// drops the mask, package pin).
		b.add(isolator.Mount{Kind: isolator.MaskFile, Source: src, Dest: dst, Why: why, Optional: true})
		return nil
	}
	var table mountTable
	if mountInfoPath != "" { // else no mount table to ask (not Linux)
		mounts, err := b.pr.ReadFile(mountInfoPath)
		if err != nil {
			return fmt.Errorf("%w: reading the mount table (%s) to mask the host's Unix sockets at every path the view shows them: %w; a read-only view does not stop connect(2) on them: mount /proc, or drop system_binds = [\"host\"] and the binds", isolator.ErrProtection, mountInfoPath, err)
		}
		table = parseMountInfo(mounts)
	}
	files := b.socketFiles(socks, table)
	for _, r := range files {
		if isolator.Within(r, project) || (keep != nil && keep(r)) {
			continue
		}
		if err := b.otherLinks(r, files); err != nil {
			return err
		}
		for _, p := range b.socketPaths(r, table) {
			why := "a host service's socket"
			if p != r {
				why += " (also " + r + ")"
			}
			if b.showsHost(p) {
				if err := mask(p, p, why); err != nil {
					return err
				}
			}
			for _, i := range b.userBinds {
				m := b.mounts[i]
				if p == m.Source || !isolator.Within(p, m.Source) {
					continue
				}
				rel, _ := filepath.Rel(m.Source, p)
				if err := mask(filepath.Join(m.Dest, rel), p, fmt.Sprintf("%s in %s", why, m.Why)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// socketFiles returns the sockets socks name (resolved, still sockets) and every
// other socket in their directories where the view shows that directory at some
// path, each once, in order.
func (b *mountBuilder) socketFiles(socks []string, table mountTable) []string {
	var out []string
	seen, scanned := map[string]bool{}, map[string]bool{}
	add := func(p string) {
		if r, err := b.pr.EvalSymlinks(p); err == nil && !seen[r] {
			if fi, err := b.pr.Lstat(r); err == nil && fi.Mode().Type() == fs.ModeSocket {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	for _, s := range socks {
		add(s)
		dir, err := b.pr.EvalSymlinks(filepath.Dir(s))
		if err != nil || scanned[dir] {
			continue
		}
		scanned[dir] = true
		if !slices.ContainsFunc(b.pathsOf(dir, table), b.shows) {
			continue
		}
		// A directory the user cannot read (only search) lists nothing: the
		// sockets /proc/net/unix names in it are masked all the same.
		ents, _ := b.pr.ReadDir(dir)
		for _, e := range ents {
			if e.Type() == fs.ModeSocket {
				add(filepath.Join(dir, e.Name()))
			}
		}
	}
	return out
}

// socketPaths returns r and the other paths of the socket r that the mount table
// gives it and that lead to it here.
func (b *mountBuilder) socketPaths(r string, table mountTable) []string {
	out := []string{r}
	as := table.aliases(r)
	if len(as) == 0 {
		return out
	}
	fi, err := b.pr.Lstat(r)
	if err != nil {
		return out
	}
	for _, a := range as {
		if ai, err := b.pr.Lstat(a.path); err == nil && os.SameFile(fi, ai) {
			out = append(out, a.path)
		}
	}
	return out
}

// otherLinks fails when the socket r has more names (hard links) than files holds:
// connect(2) through a link in another directory reaches the service, and finding
// it would take a walk of the host's file systems. Only the socket's owner (or
// root) can link it (fs.protected_hardlinks), so this is a host's own set-up.
func (b *mountBuilder) otherLinks(r string, files []string) error {
	fi, err := b.pr.Lstat(r)
	if err != nil {
		return nil
	}
	links := linkCount(fi)
	if links <= 1 {
		return nil
	}
	// Its own directory is read even where the view does not show it: a link
	// beside a socket the view hides is hidden too.
	dir := filepath.Dir(r)
	names := slices.DeleteFunc(slices.Clone(files), func(f string) bool { return filepath.Dir(f) == dir })
	ents, _ := b.pr.ReadDir(dir)
	for _, e := range ents {
		if e.Type() == fs.ModeSocket {
			names = append(names, filepath.Join(dir, e.Name()))
		}
	}
	found := uint64(0)
	for _, f := range names {
		if fo, err := b.pr.Lstat(f); err == nil && os.SameFile(fi, fo) {
			found++
		}
	}
	if links <= found {
		return nil
	}
	return fmt.Errorf("%w: the host socket %s has %d names (hard links) and devsandbox found %d of them (in its directory and those of the other sockets it masks); through another, a read-only view would still reach the service (connect(2)): remove the other hard links to it (find / -xdev -samefile %s), or drop system_binds = [\"host\"] and the binds that show it", isolator.ErrProtection, r, links, found, r)
}

// linkCount is fi's number of hard links (1 when the file system does not say).
func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// pathsOf returns p and the other paths the mount table gives it.
func (b *mountBuilder) pathsOf(p string, table mountTable) []string {
	out := []string{p}
	for _, a := range table.aliases(p) {
		out = append(out, a.path)
	}
	return out
}

// shows reports whether the view shows the host's p: at p (showsHost) or in one of
// the user's binds.
func (b *mountBuilder) shows(p string) bool {
	if b.showsHost(p) {
		return true
	}
	for _, i := range b.userBinds {
		if isolator.Within(p, b.mounts[i].Source) {
			return true
		}
	}
	return false
}

// showsHost reports whether the view shows the host's r at r: no mount lies at or
// above it, and the system view shows it (the host view all but the sandbox's own
// trees).
func (b *mountBuilder) showsHost(r string) bool {
	if b.covering(r) >= 0 || !b.visible(r) {
		return false
	}
	sys, _ := b.view() // a view that failed shows nothing; Build returns its error
	return !sys.Host || !withinAny(r, ownTrees)
}

// withinAny reports whether p is or lies in one of dirs.
func withinAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if isolator.Within(p, d) {
			return true
		}
	}
	return false
}
