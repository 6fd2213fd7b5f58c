package cgroup

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/sysrandom"
)

// Limits are what a session cgroup enforces; zero means no limit.
type Limits struct {
	Pids   int     // tasks
	Memory int64   // bytes, with swap off
	CPUs   float64 // CPUs' worth of time
}

// controllers are those of Controllers that l limits.
func (l Limits) controllers() []string {
	var cs []string
	if l.Pids > 0 {
		cs = append(cs, Pids)
	}
	if l.Memory > 0 {
		cs = append(cs, Memory)
	}
	if l.CPUs > 0 {
		cs = append(cs, CPU)
	}
	return cs
}

// capped is l with each limit of c that is stricter, or that l does not set.
func (l Limits) capped(c Limits) Limits {
	if c.Pids > 0 && (l.Pids == 0 || c.Pids < l.Pids) {
		l.Pids = c.Pids
	}
	if c.Memory > 0 && (l.Memory == 0 || c.Memory < l.Memory) {
		l.Memory = c.Memory
	}
	if c.CPUs > 0 && (l.CPUs == 0 || c.CPUs < l.CPUs) {
		l.CPUs = c.CPUs
	}
	return l
}

// Period is the CPU quota's period in microseconds; MinQuota is the smallest quota
// the kernel takes (1 ms).
const (
	Period   = 100000
	MinQuota = 1000
)

// Quota is the CPU quota in microseconds per Period for cpus, or an error when it
// is below what the kernel can enforce.
func Quota(cpus float64) (int64, error) {
	q := int64(math.Round(cpus * Period))
	if q < MinQuota {
		return 0, fmt.Errorf("limits.cpus = %g is below the smallest CPU quota the kernel enforces (%g)", cpus, float64(MinQuota)/Period)
	}
	return q, nil
}

// NamePrefix starts the name of every session cgroup; Sweep looks at no other.
const NamePrefix = "devsandbox-"

// Session is a session cgroup: a directory in each hierarchy that provides one of
// its limits, each held by an flock until Remove.
type Session struct {
	Name string
	dirs []dir
}

type dir struct {
	path  string
	v2    bool
	ctrls []string
	caps  Limits
	fd    int
	fs    tree
}

// tree makes and removes cgroup directories: the cgroup file systems, or a fake of
// them in tests (which must create the interface files a kernel would).
type tree struct {
	mkdir func(path string) error
	rmdir func(path string) error
}

var hostTree = tree{
	mkdir: func(p string) error { return unix.Mkdir(p, 0o755) },
	rmdir: unix.Rmdir,
}

// Dirs are the session cgroup's directories, one per hierarchy.
func (s *Session) Dirs() []string {
	var ds []string
	for _, d := range s.dirs {
		ds = append(ds, d.path)
	}
	return ds
}

// CloneFD returns a descriptor of the session cgroup for CLONE_INTO_CGROUP
// (SysProcAttr.CgroupFD) when it is a single cgroup v2 directory; otherwise a
// process joins it with Join before it starts the sandbox.
func (s *Session) CloneFD() (int, bool) {
	if len(s.dirs) == 1 && s.dirs[0].v2 {
		return s.dirs[0].fd, true
	}
	return -1, false
}

// Create makes a session cgroup named NamePrefix+tag+"-"+<random> in each of hs and
// writes lim, within each hierarchy's Caps, to it: pids.max; the memory limit with swap off (v1:
// memory.limit_in_bytes and memory.memsw.limit_in_bytes; v2: memory.max and
// memory.swap.max = 0), refused when the host uses swap and the hierarchy cannot
// account for it; the CPU quota (v1: cpu.cfs_quota_us; v2: cpu.max). swap says
// whether the host uses swap (Layout.Swap).
func Create(hs []Hierarchy, tag string, lim Limits, swap bool) (*Session, error) {
	return hostTree.create(hs, tag, lim, swap)
}

func (fs tree) create(hs []Hierarchy, tag string, lim Limits, swap bool) (*Session, error) {
	if lim.CPUs > 0 {
		if _, err := Quota(lim.CPUs); err != nil {
			return nil, err
		}
	}
	for _, h := range hs {
		if len(h.Enable) == 0 {
			continue
		}
		val := "+" + strings.Join(h.Enable, " +")
		if err := write(h.Parent, "cgroup.subtree_control", val); err != nil {
			return nil, fmt.Errorf("enabling the %s controllers for the session cgroup: %w", strings.Join(h.Enable, ", "), err)
		}
	}
	var s *Session
	var err error
	// A concurrent Sweep may take a directory between its mkdir and its lock: then
	// it is gone or about to be, and another name is tried.
	for attempt := 0; attempt < 3; attempt++ {
		var retry bool
		if s, retry, err = fs.createDirs(hs, tag); !retry {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	for _, d := range s.dirs {
		if err = d.setLimits(lim.capped(d.caps), swap); err != nil {
			break
		}
	}
	if err != nil {
		if rerr := s.Remove(); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	return s, nil
}

// createDirs makes and locks the directories of one session cgroup; retry is set
// when a concurrent Sweep got in the way.
func (fs tree) createDirs(hs []Hierarchy, tag string) (_ *Session, retry bool, _ error) {
	// getrandom(2) itself, not crypto/rand: the init links this package, and
	// crypto/rand's package init would run on every launch (package sysrandom).
	var rnd [8]byte
	if err := sysrandom.Read(rnd[:]); err != nil {
		return nil, false, err
	}
	s := &Session{Name: NamePrefix + tag + "-" + hex.EncodeToString(rnd[:])}
	undo := func(err error, retry bool) (*Session, bool, error) {
		_ = s.Remove()
		return nil, retry, err
	}
	for _, h := range hs {
		path := filepath.Join(h.Parent, s.Name)
		if err := fs.mkdir(path); err != nil {
			return undo(fmt.Errorf("creating the session cgroup %s: %w", path, err), errors.Is(err, unix.EEXIST))
		}
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			_ = fs.rmdir(path)
			return undo(fmt.Errorf("opening the session cgroup %s: %w", path, err), errors.Is(err, unix.ENOENT))
		}
		s.dirs = append(s.dirs, dir{path: path, v2: h.V2, ctrls: h.Controllers, caps: h.Caps, fd: fd, fs: fs})
		if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			return undo(fmt.Errorf("locking the session cgroup %s: %w", path, err), errors.Is(err, unix.EWOULDBLOCK))
		}
		var a, b unix.Stat_t
		if unix.Fstat(fd, &a) != nil || unix.Stat(path, &b) != nil || a.Ino != b.Ino {
			return undo(fmt.Errorf("the session cgroup %s was removed while it was made", path), true)
		}
	}
	return s, false, nil
}

// setLimits writes the limits of lim that d's controllers enforce.
func (d dir) setLimits(lim Limits, swap bool) error {
	has := func(c string) bool { return slices.Contains(d.ctrls, c) }
	if lim.Pids > 0 && has(Pids) {
		if err := write(d.path, "pids.max", strconv.Itoa(lim.Pids)); err != nil {
			return err
		}
	}
	if lim.Memory > 0 && has(Memory) {
		mem := strconv.FormatInt(lim.Memory, 10)
		limit, swapFile, swapVal := "memory.limit_in_bytes", "memory.memsw.limit_in_bytes", mem
		if d.v2 {
			limit, swapFile, swapVal = "memory.max", "memory.swap.max", "0"
		}
		// v1 refuses a memsw limit below the memory limit: the memory limit first.
		if err := write(d.path, limit, mem); err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(d.path, swapFile)); err == nil {
			if err := write(d.path, swapFile, swapVal); err != nil {
				return err
			}
		} else if swap {
			return fmt.Errorf("the host uses swap and %s has no %s, so the memory limit would not keep the sandbox out of swap (enable swap accounting: swapaccount=1 on cgroup v1)", d.path, swapFile)
		}
	}
	if lim.CPUs > 0 && has(CPU) {
		q, err := Quota(lim.CPUs)
		if err != nil {
			return err
		}
		if d.v2 {
			return write(d.path, "cpu.max", fmt.Sprintf("%d %d", q, Period))
		}
		if err := write(d.path, "cpu.cfs_period_us", strconv.Itoa(Period)); err != nil {
			return err
		}
		return write(d.path, "cpu.cfs_quota_us", strconv.FormatInt(q, 10))
	}
	return nil
}

// write writes val to the existing cgroup file dir/name.
func write(dir, name, val string) error {
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("writing %s to %s: %w", val, p, err)
	}
	_, err = f.WriteString(val)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s to %s: %w", val, p, err)
	}
	return nil
}

// OOMKills is how many processes the kernel's out-of-memory killer has killed in
// the session cgroup (v1: memory.oom_control, v2: memory.events), or -1 when it has
// no memory controller or the count cannot be read.
func (s *Session) OOMKills() int {
	for _, d := range s.dirs {
		if !slices.Contains(d.ctrls, Memory) {
			continue
		}
		file := "memory.oom_control"
		if d.v2 {
			file = "memory.events"
		}
		if n, ok := Counter(filepath.Join(d.path, file), "oom_kill"); ok {
			return n
		}
	}
	return -1
}

// PidsRefused is how many forks the session cgroup's pids limit refused (the "max"
// count of pids.events, v1 and v2 alike), or -1 when it has no pids controller or
// the count cannot be read.
func (s *Session) PidsRefused() int {
	for _, d := range s.dirs {
		if !slices.Contains(d.ctrls, Pids) {
			continue
		}
		if n, ok := Counter(filepath.Join(d.path, "pids.events"), "max"); ok {
			return n
		}
	}
	return -1
}

// Counter reads "KEY N" from a file of such lines (cgroup event files, /proc/vmstat).
func Counter(path, key string) (int, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return n, err == nil
		}
	}
	return 0, false
}

// removeTries bounds how long Remove waits for killed processes to leave.
const removeTries = 100

// Remove kills whatever is still in the session cgroup, removes its directories and
// releases their locks. Run calls it once the sandbox has exited, when nothing
// should be left.
func (s *Session) Remove() error {
	var errs []error
	for _, d := range s.dirs {
		errs = append(errs, d.remove())
	}
	s.dirs = nil
	return errors.Join(errs...)
}

func (d dir) remove() error {
	defer unix.Close(d.fd)
	for i := 0; ; i++ {
		err := d.fs.rmdir(d.path)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || i == removeTries {
			return fmt.Errorf("removing the session cgroup %s: %w", d.path, err)
		}
		d.kill()
		// Killed processes leave the cgroup as the kernel reaps them; v1 has no
		// notification of that.
		time.Sleep(10 * time.Millisecond)
	}
}

// kill sends SIGKILL to every process in d.
func (d dir) kill() {
	if d.v2 && write(d.path, "cgroup.kill", "1") == nil {
		return
	}
	b, err := os.ReadFile(filepath.Join(d.path, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// Sweep removes the session cgroups in the parents of hs that no run holds (their
// lock is free) and that hold no process: what runs killed with SIGKILL left. It
// returns the directories it removed.
func Sweep(hs []Hierarchy) []string { return hostTree.sweep(hs, false) }

// Stale returns the session cgroups Sweep would remove, and removes nothing.
func Stale(hs []Hierarchy) []string { return hostTree.sweep(hs, true) }

func (fs tree) sweep(hs []Hierarchy, dry bool) []string {
	var removed []string
	for _, h := range hs {
		ents, err := os.ReadDir(h.Parent)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !e.IsDir() || !isSessionName(e.Name()) {
				continue
			}
			path := filepath.Join(h.Parent, e.Name())
			if fs.sweepOne(path, h.V2, dry) {
				removed = append(removed, path)
			}
		}
	}
	return removed
}

// sweepOne removes the session cgroup at path when it is unlocked and empty (or,
// when dry is set, only reports that it would).
func (fs tree) sweepOne(path string, v2, dry bool) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false // a live run holds it
	}
	if v2 {
		if n, ok := Counter(filepath.Join(path, "cgroup.events"), "populated"); !ok || n != 0 {
			return false
		}
	} else if b, err := os.ReadFile(filepath.Join(path, "cgroup.procs")); err != nil || len(strings.TrimSpace(string(b))) > 0 {
		return false
	}
	return dry || fs.rmdir(path) == nil
}

// isSessionName reports whether name is one Create makes: NamePrefix, a tag, "-" and
// 16 hex digits.
func isSessionName(name string) bool {
	if !strings.HasPrefix(name, NamePrefix) || len(name) < len(NamePrefix)+18 {
		return false
	}
	rnd := name[len(name)-17:]
	if rnd[0] != '-' {
		return false
	}
	_, err := hex.DecodeString(rnd[1:])
	return err == nil && rnd[1:] == strings.ToLower(rnd[1:])
}

// JoinArg starts devsandbox-init's join step: `devsandbox-init --cgroup-join
// --report-fd=N FILE... -- PROGRAM ARG...` writes its own pid to each cgroup.procs
// FILE and then execs PROGRAM, so that PROGRAM and everything it starts are in the
// session cgroup from their first instruction. On failure it reports on the
// readiness descriptor N and exits 125 without running PROGRAM.
const JoinArg = "--cgroup-join"

// Join moves the calling process (every thread of it) into the cgroups whose
// cgroup.procs files are given.
func Join(procs []string) error {
	for _, p := range procs {
		fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			// "0" is the writing process itself.
			_, err = unix.Write(fd, []byte("0"))
			unix.Close(fd)
		}
		if err != nil {
			return fmt.Errorf("joining the session cgroup %s: %w", filepath.Dir(p), err)
		}
	}
	return nil
}
