package planner

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

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

// maskHostSockets masks the host's bound Unix sockets socks wherever the view shows
// them: at their own path when the system view (system_binds = ["host"], a system
// bind) shows it, and at their place in each of the user's binds that holds them. A
// read-only mount does not stop connect(2), and a service's socket outside /run
// (MySQL's, a snap's, a VM manager's under /var/lib, /srv, /opt) cannot be known by
// name. Left shown: sockets in the sandbox's own trees and the project, those keep
// reports (the engines sandbox.docker_socket shares), and a socket a user bind names
// itself — the way to share one. A socket that is gone or cannot be reached by the
// user is skipped: the sandbox could not connect to it either.
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
	for _, s := range socks {
		r, err := b.pr.EvalSymlinks(s)
		if err != nil {
			continue
		}
		fi, err := b.pr.Lstat(r)
		if err != nil || fi.Mode().Type() != fs.ModeSocket || isolator.Within(r, project) || (keep != nil && keep(r)) {
			continue
		}
		if b.showsHost(r) {
			if err := mask(r, r, "a host service's socket"); err != nil {
				return err
			}
		}
		for _, i := range b.userBinds {
			m := b.mounts[i]
			if r == m.Source || !isolator.Within(r, m.Source) {
				continue
			}
			rel, _ := filepath.Rel(m.Source, r)
			if err := mask(filepath.Join(m.Dest, rel), r, fmt.Sprintf("a host service's socket in %s", m.Why)); err != nil {
				return err
			}
		}
	}
	return nil
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
