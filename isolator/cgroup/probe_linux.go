// Package cgroup makes the per-session cgroups that hold a sandbox's resource limits
// (pids.max, a memory limit with swap off, a CPU quota) where the invoking user may
// create cgroups: root on cgroup v1 or v2, or anyone with a writable, delegated cgroup
// v2 subtree.
//
// Probe finds, without changing anything, which hierarchy provides each controller
// and where a session cgroup would go. A session cgroup is nested under the cgroup
// devsandbox runs in, so the limits of that cgroup still bind the sandbox: on v1 it
// is a child of it; on v2, whose cgroups with processes cannot have children with
// controllers, a child of it only when it is the hierarchy's root, else a child of
// its parent, which then also gets the limits devsandbox's own cgroup sets (Caps),
// so that the sandbox is never less bound than devsandbox itself.
//
// Create makes a session cgroup, holding an flock on each of its directories for the
// life of the run; Remove kills what is left in it and removes it; Sweep removes the
// empty, unlocked session cgroups of runs that were killed. Join moves the calling
// process into session cgroups (the step a v1 launch runs before it execs the
// sandbox; on v2 the sandbox is started in its cgroup with CLONE_INTO_CGROUP).
package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/devsandbox/devsandbox/internal/mountinfo"
	"golang.org/x/sys/unix"
)

// The controllers devsandbox uses.
const (
	Pids   = "pids"
	Memory = "memory"
	CPU    = "cpu"
)

// Controllers are the controllers devsandbox uses, in a fixed order.
var Controllers = []string{Pids, Memory, CPU}

// ErrUnavailable is wrapped by the reasons a controller cannot be used here.
var ErrUnavailable = errors.New("no session cgroup here")

// Host is where Probe looks.
type Host struct {
	// Root prefixes every path Probe reads (a fake tree in tests; "" on the host).
	// Paths in the Layout are host paths, without it.
	Root string
	// Writable reports whether the caller may write the host path.
	Writable func(path string) bool
}

// OnHost is the host itself, seen by the calling process.
func OnHost() Host {
	return Host{Writable: func(p string) bool { return unix.Access(p, unix.W_OK) == nil }}
}

// Hierarchy is one mounted cgroup hierarchy in which a session cgroup is made.
type Hierarchy struct {
	V2 bool
	// Parent is the host directory the session cgroup is made in.
	Parent string
	// Controllers are those of Controllers that this hierarchy provides here.
	Controllers []string
	// Enable are controllers Create enables in Parent's cgroup.subtree_control first
	// (v2), as runc does for the cgroups it makes.
	Enable []string
	// Caps are the limits of the cgroup devsandbox runs in when the session cgroup
	// goes beside it (v2): Create holds the session cgroup to them as well.
	Caps Limits
}

// Layout is what Probe found.
type Layout struct {
	// Hierarchies provide the controllers that can be used here.
	Hierarchies []Hierarchy
	// Missing says, for each controller that cannot be used, why (wrapping
	// ErrUnavailable).
	Missing map[string]error
	// Mounts are the mount points of every cgroup hierarchy on the host.
	Mounts []string
	// Swap is whether the host has swap in use; a memory limit then needs the
	// hierarchy's swap control.
	Swap bool
}

// For returns the hierarchies that provide ctrls, or why one of them cannot be used.
func (l *Layout) For(ctrls ...string) ([]Hierarchy, error) {
	var errs []error
	var hs []Hierarchy
	for _, c := range ctrls {
		if err := l.Missing[c]; err != nil {
			errs = append(errs, err)
			continue
		}
		i := slices.IndexFunc(l.Hierarchies, func(h Hierarchy) bool { return slices.Contains(h.Controllers, c) })
		if i < 0 {
			errs = append(errs, fmt.Errorf("%w: the %s controller was not probed", ErrUnavailable, c))
			continue
		}
		if !slices.ContainsFunc(hs, func(h Hierarchy) bool { return h.Parent == l.Hierarchies[i].Parent }) {
			hs = append(hs, l.Hierarchies[i])
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return hs, nil
}

// mount is one cgroup mount from mountinfo.
type mount struct {
	point, root string
	v2          bool
	opts        []string // super options: the v1 controllers among them
}

// Probe reads the calling process's cgroups and the host's cgroup mounts and says
// where each of Controllers can have a session cgroup. It changes nothing.
func Probe(h Host) *Layout {
	l := &Layout{Missing: map[string]error{}}
	missing := func(err error, ctrls ...string) {
		for _, c := range ctrls {
			if l.Missing[c] == nil {
				l.Missing[c] = err
			}
		}
	}
	self, err1 := os.ReadFile(h.Root + "/proc/self/cgroup")
	info, err2 := os.ReadFile(h.Root + "/proc/self/mountinfo")
	if err := errors.Join(err1, err2); err != nil {
		missing(fmt.Errorf("%w: reading this process's cgroups: %w", ErrUnavailable, err), Controllers...)
		return l
	}
	mounts := parseMountinfo(info)
	for _, m := range mounts {
		l.Mounts = append(l.Mounts, m.point)
	}
	l.Swap = swapInUse(h.Root)
	v1, v2path, hasV2 := parseSelf(self)
	var v2want []string
	for _, c := range Controllers {
		path, ok := v1[c]
		if !ok {
			v2want = append(v2want, c)
			continue
		}
		i := slices.IndexFunc(mounts, func(m mount) bool { return !m.v2 && slices.Contains(m.opts, c) })
		if i < 0 {
			missing(fmt.Errorf("%w: the %s controller's cgroup v1 hierarchy is not mounted", ErrUnavailable, c), c)
			continue
		}
		dir, err := within(mounts[i], path)
		if err != nil {
			missing(err, c)
			continue
		}
		if err := h.checkV1(l, dir, c); err != nil {
			missing(err, c)
			continue
		}
		if j := slices.IndexFunc(l.Hierarchies, func(x Hierarchy) bool { return x.Parent == dir }); j >= 0 {
			l.Hierarchies[j].Controllers = append(l.Hierarchies[j].Controllers, c)
		} else {
			l.Hierarchies = append(l.Hierarchies, Hierarchy{Parent: dir, Controllers: []string{c}})
		}
	}
	if len(v2want) == 0 {
		return l
	}
	i := slices.IndexFunc(mounts, func(m mount) bool { return m.v2 })
	if !hasV2 || i < 0 {
		missing(fmt.Errorf("%w: no cgroup hierarchy here has the controller (no cgroup v1 mount has it, and cgroup v2 is not mounted)", ErrUnavailable), v2want...)
		return l
	}
	hy, errs := h.probeV2(l, mounts[i], v2path, v2want)
	for c, err := range errs {
		missing(err, c)
	}
	if len(hy.Controllers) > 0 {
		l.Hierarchies = append(l.Hierarchies, hy)
	}
	return l
}

// checkV1 says why a session cgroup for c cannot be made in dir of a v1 hierarchy.
func (h Host) checkV1(l *Layout, dir, c string) error {
	if !h.Writable(dir) {
		return fmt.Errorf("%w: %s (the cgroup v1 %s hierarchy) is not writable by you", ErrUnavailable, dir, c)
	}
	switch c {
	case Memory:
		if l.Swap && !h.exists(dir, "memory.memsw.limit_in_bytes") {
			return fmt.Errorf("%w: the host uses swap and its memory cgroups have no swap accounting (no memory.memsw.limit_in_bytes; boot with swapaccount=1), so a memory limit would not keep the sandbox out of swap", ErrUnavailable)
		}
	case CPU:
		if !h.exists(dir, "cpu.cfs_quota_us") {
			return fmt.Errorf("%w: the cpu cgroups have no CPU quota (no cpu.cfs_quota_us: the kernel lacks CONFIG_CFS_BANDWIDTH)", ErrUnavailable)
		}
	}
	return nil
}

// probeV2 finds the parent of a session cgroup in the v2 hierarchy m, where the
// calling process is in the cgroup self, for the controllers want.
func (h Host) probeV2(l *Layout, m mount, self string, want []string) (Hierarchy, map[string]error) {
	errs := map[string]error{}
	all := func(err error) (Hierarchy, map[string]error) {
		for _, c := range want {
			errs[c] = err
		}
		return Hierarchy{}, errs
	}
	dir, err := within(m, self)
	if err != nil {
		return all(err)
	}
	parent := dir
	if h.exists(dir, "cgroup.type") {
		// Not the hierarchy's root: a cgroup with processes (devsandbox's own) can
		// have no children with controllers, so the session cgroup goes beside it.
		if dir == m.point {
			return all(fmt.Errorf("%w: devsandbox runs in %s, the top of its cgroup namespace, which holds processes: cgroup v2 gives such a cgroup no children with controllers. Run devsandbox from a leaf cgroup under a delegated one (as docker-in-docker entrypoints do: move the processes into a child and enable the controllers in cgroup.subtree_control)", ErrUnavailable, dir))
		}
		parent = filepath.Dir(dir)
	}
	for _, f := range []string{"", "cgroup.procs"} {
		if p := filepath.Join(parent, f); !h.Writable(p) {
			return all(fmt.Errorf("%w: %s is not writable by you (no delegated cgroup v2 subtree here)", ErrUnavailable, p))
		}
	}
	avail := h.fields(parent, "cgroup.controllers")
	enabled := h.fields(parent, "cgroup.subtree_control")
	hy := Hierarchy{V2: true, Parent: parent}
	for _, c := range want {
		if !slices.Contains(avail, c) {
			errs[c] = fmt.Errorf("%w: the %s controller is not available in %s (cgroup.controllers lists %q)", ErrUnavailable, c, parent, avail)
			continue
		}
		if !slices.Contains(enabled, c) {
			hy.Enable = append(hy.Enable, c)
		}
		hy.Controllers = append(hy.Controllers, c)
	}
	if parent != dir {
		hy.Caps = h.caps(dir)
		for _, c := range hy.Caps.controllers() {
			if !slices.Contains(hy.Controllers, c) {
				return all(fmt.Errorf("%w: devsandbox's cgroup %s limits %s, and a session cgroup beside it (in %s) could not hold that limit", ErrUnavailable, dir, c, parent))
			}
		}
	}
	var why error
	switch {
	case len(hy.Enable) == 0:
	case !h.Writable(filepath.Join(parent, "cgroup.subtree_control")):
		why = fmt.Errorf("%w: %s does not enable %s for its children and its cgroup.subtree_control is not writable by you", ErrUnavailable, parent, strings.Join(hy.Enable, ", "))
	case parent != dir && len(h.fields(parent, "cgroup.procs")) > 0:
		why = fmt.Errorf("%w: %s does not enable %s for its children and holds processes, so cgroup v2 does not let it", ErrUnavailable, parent, strings.Join(hy.Enable, ", "))
	}
	if why != nil && len(hy.Caps.controllers()) > 0 {
		return all(why) // the caps need every controller
	}
	if why != nil {
		// The controllers it does enable stay usable.
		for _, c := range hy.Enable {
			errs[c] = why
		}
		hy.Controllers = slices.DeleteFunc(hy.Controllers, func(c string) bool { return slices.Contains(hy.Enable, c) })
		hy.Enable = nil
	}
	return hy, errs
}

// caps reads the limits the v2 cgroup dir sets itself: pids.max, memory.max and
// cpu.max ("max" is none).
func (h Host) caps(dir string) Limits {
	var l Limits
	num := func(name string) (int64, string, bool) {
		f := h.fields(dir, name)
		if len(f) == 0 || f[0] == "max" {
			return 0, "", false
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, "", false
		}
		rest := ""
		if len(f) > 1 {
			rest = f[1]
		}
		return n, rest, true
	}
	if n, _, ok := num("pids.max"); ok {
		l.Pids = int(n)
	}
	if n, _, ok := num("memory.max"); ok {
		l.Memory = n
	}
	if q, period, ok := num("cpu.max"); ok {
		if p, err := strconv.ParseInt(period, 10, 64); err == nil && p > 0 {
			l.CPUs = float64(q) / float64(p)
		}
	}
	return l
}

func (h Host) exists(dir, name string) bool {
	_, err := os.Stat(h.Root + filepath.Join(dir, name))
	return err == nil
}

// fields returns the whitespace-separated words of a cgroup file (nil when absent).
func (h Host) fields(dir, name string) []string {
	b, err := os.ReadFile(h.Root + filepath.Join(dir, name))
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// within returns the host directory of the cgroup path (as /proc/self/cgroup gives
// it) in mount m.
func within(m mount, path string) (string, error) {
	rel, err := filepath.Rel(m.root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || !filepath.IsAbs(path) {
		return "", fmt.Errorf("%w: this process's cgroup %s is outside the part of the hierarchy mounted at %s", ErrUnavailable, path, m.point)
	}
	return filepath.Join(m.point, rel), nil
}

// parseSelf reads /proc/self/cgroup: the v1 cgroup of each controller, and the v2
// cgroup.
func parseSelf(b []byte) (v1 map[string]string, v2 string, hasV2 bool) {
	v1 = map[string]string{}
	for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2, hasV2 = parts[2], true
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			v1[c] = parts[2]
		}
	}
	return v1, v2, hasV2
}

// parseMountinfo returns the cgroup mounts in /proc/self/mountinfo.
func parseMountinfo(b []byte) []mount {
	var ms []mount
	for _, e := range mountinfo.Parse(b) {
		m := mount{root: e.Root, point: e.Point}
		switch e.FSType {
		case "cgroup2":
			m.v2 = true
		case "cgroup":
			m.opts = strings.Split(e.SuperOpts, ",")
		default:
			continue
		}
		ms = append(ms, m)
	}
	return ms
}

// swapInUse reports whether /proc/swaps lists a swap area.
func swapInUse(root string) bool {
	b, err := os.ReadFile(root + "/proc/swaps")
	if err != nil {
		return false
	}
	return len(strings.Split(strings.TrimSpace(string(b)), "\n")) > 1
}
