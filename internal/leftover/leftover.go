// Package leftover is what the integration suite compares between its start and its
// end to prove that devsandbox leaves nothing running or mounted after it exits: the
// differences of lists taken at both times, the processes that count, the mount
// table's entries, the state entries that are kept by design, and which test a
// leftover names. Everything here is pure; the suite reads the host
// (integration/suiteleft_test.go).
package leftover

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/devsandbox/devsandbox/internal/mountinfo"
)

// Appeared returns the entries of now that before does not have, sorted, as a
// multiset: an entry twice in now and once in before appears once.
func Appeared(before, now []string) []string {
	seen := map[string]int{}
	for _, b := range before {
		seen[b]++
	}
	var out []string
	for _, n := range now {
		if seen[n] > 0 {
			seen[n]--
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Proc is one process as the suite lists it.
type Proc struct {
	Pid, PPid, UID int
	Start          uint64 // clock ticks after boot: with Pid, who it is
	State          string // R, S, Z, ...
	Exe            string // the base name of its executable, else its comm
	Args           string // argv joined by spaces
	Cwd            string
}

// Key tells a process from a later one with its pid.
func (p Proc) Key() string { return strconv.Itoa(p.Pid) + "@" + strconv.FormatUint(p.Start, 10) }

func (p Proc) String() string {
	return fmt.Sprintf("pid %d (uid %d, %s, parent %d, in %s): %s", p.Pid, p.UID, p.State, p.PPid, p.Cwd, p.Args)
}

// ParseStat reads a /proc/PID/stat line: the command name, the state, the parent's
// pid and the start time; ok is false for a line it cannot read. The command name may
// hold spaces and parentheses: it ends at the last ')'.
func ParseStat(b []byte) (comm, state string, ppid int, start uint64, ok bool) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return "", "", 0, 0, false
	}
	f := strings.Fields(string(b[end+1:])) // state(3) ppid(4) ... starttime(22)
	if len(f) < 20 {
		return "", "", 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return "", "", 0, 0, false
	}
	return string(b[open+1 : end]), f[0], ppid, start, true
}

// Watched reports whether exe names a program of a run that must not outlive it,
// whoever's it is: devsandbox's own (devsandbox, devsandbox-proxy, devsandbox-docker,
// ...), bwrap, pasta (pasta.avx2 too), conmon.
func Watched(exe string) bool {
	return strings.HasPrefix(exe, "devsandbox") || exe == "bwrap" || exe == "pasta" || strings.HasPrefix(exe, "pasta.") || exe == "conmon"
}

// LeftProcs returns the processes of now, in pid order, that before (keys of Proc)
// does not have and that are the test user's (uid) or run a Watched program. Not
// counted: the pids of keep (the podman pause process, which outlives every run by
// design), and the descendants of a process of before that is the user's (the
// long-lived processes the environment owns, such as the rootless engine's dockerd:
// its new children are its containers', which the container check judges), and
// zombies: they have exited, and wait for their parent to read their status (pid 1 of
// this machine kind reaps none); a parent that is a leftover is one itself.
func LeftProcs(before map[string]bool, now []Proc, uid int, keep map[int]bool) []Proc {
	byPid := map[int]Proc{}
	for _, p := range now {
		byPid[p.Pid] = p
	}
	owned := func(p Proc) bool {
		for range 64 { // a chain of parents, bounded
			q, ok := byPid[p.PPid]
			if !ok {
				return false
			}
			if before[q.Key()] && q.UID == uid {
				return true
			}
			p = q
		}
		return false
	}
	var out []Proc
	for _, p := range now {
		if before[p.Key()] || keep[p.Pid] || p.State == "Z" || (p.UID != uid && !Watched(p.Exe)) || owned(p) {
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Proc) int { return a.Pid - b.Pid })
	return out
}

// MountKeys are the entries of a mount table as the suite compares them: the mount
// point, the file system type, the device and the mounted directory of it (a mount's
// ID is new at every mount, so it is left out).
func MountKeys(es []mountinfo.Entry) []string {
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, fmt.Sprintf("%s (%s %s %s)", e.Point, e.FSType, e.Dev, e.Root))
	}
	return out
}

// MountPoint is the mount point of a key of MountKeys.
func MountPoint(key string) string {
	i := strings.LastIndex(key, " (")
	if i < 0 {
		return key
	}
	return key[:i]
}

// StateCandidate reports whether an entry named name, owned by owner, of a
// directory the suite lists (/tmp, /var/tmp, /dev/shm, the runtime directory) may be
// devsandbox's: the test user's (uid), one of its subordinate ids' (what a container
// or podman made, 100000 and above), or named devsandbox*. Others' files (root's
// builds, another user's) are not compared.
func StateCandidate(name string, owner, uid int) bool {
	return owner == uid || owner >= 100000 || strings.HasPrefix(name, "devsandbox")
}

// Collapse drops from sorted paths those below another of them: a new directory is
// named once, not with everything in it.
func Collapse(paths []string) []string {
	var out []string
	for _, p := range paths {
		if len(out) > 0 && strings.HasPrefix(p, out[len(out)-1]+"/") {
			continue
		}
		out = append(out, p)
	}
	return out
}

// Host names the per-user places of the suite's state listing.
type Host struct {
	UID        int
	RuntimeDir string // /run/user/UID
}

// KeptByDesign reports whether path, new in a state listing, is one devsandbox or
// podman keeps for every later run by design, and so no leftover: the per-user
// directories the sessions' ones go in (/dev/shm/devsandbox-UID, the runtime
// directory's devsandbox and podman), the podman services' lock for all of them
// (isolator/krun: leftfiles.go), and podman's own state in the runtime directory
// (containers, libpod: what a left container holds there the container check finds).
func KeptByDesign(path string, h Host) bool {
	rd := h.RuntimeDir
	switch path {
	case filepath.Join("/dev/shm", "devsandbox-"+strconv.Itoa(h.UID)),
		filepath.Join(rd, "devsandbox"), filepath.Join(rd, "podman"), filepath.Join(rd, "netns"), filepath.Join(rd, "runc"),
		filepath.Join(rd, "podman", "devsandbox-service.lock"):
		return true
	}
	for _, own := range []string{"containers", "libpod"} {
		d := filepath.Join(rd, own)
		if path == d || strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}

// Owners records which test made which project, to name the test a leftover most
// likely comes from: a leftover names a project by its directory, its name
// (<basename>-<hash>) or its hash (the socket directory's name). Safe for concurrent
// use (tests run in parallel).
type Owners struct {
	mu   sync.Mutex
	keys map[string]string // a project's directory, name or hash → the test
}

// Add records keys (non-empty) as test's.
func (o *Owners) Add(test string, keys ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.keys == nil {
		o.keys = map[string]string{}
	}
	for _, k := range keys {
		if k != "" {
			o.keys[k] = test
		}
	}
}

// Of returns the test whose key s contains (the longest key found: a directory before
// the hash in it), "" when s names none.
func (o *Owners) Of(s string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	best, test := "", ""
	for k, t := range o.keys {
		if len(k) > len(best) && strings.Contains(s, k) {
			best, test = k, t
		}
	}
	return test
}

// Family is the top-level test of a test's name (TestKeepContainer of
// TestKeepContainer/docker/reuse).
func Family(test string) string {
	f, _, _ := strings.Cut(test, "/")
	return f
}
