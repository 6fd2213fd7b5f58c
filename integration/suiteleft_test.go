//go:build integration

package integration

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/internal/leftover"
	"github.com/devsandbox/devsandbox/internal/mountinfo"
)

// DESIGN.md promises that nothing is left running or mounted after devsandbox exits.
// Tests check that of their own runs in places; the suite checks it of all of them at
// its end: what the host has
// once setup is done (recordSuiteLeft) is compared with what it has after the last
// test (suiteLeftovers), for
//   - containers in each docker engine the suite uses and in the test user's podman
//     storage (krun);
//   - volumes and networks in those engines (but devsandbox-mask, which the setup
//     script owns), and the test user's podman volumes;
//   - processes: the test user's, and anyone's devsandbox*, bwrap, pasta, conmon
//     (but the descendants of the user's processes that were there at the start,
//     such as the rootless engine's, podman's pause process, and zombies);
//   - the host's mount table (the suite's mount namespace is the host's);
//   - state: the entries the test user (or a subordinate id) owns, or named
//     devsandbox*, in /tmp, /var/tmp, /dev/shm and the user's runtime directory, two
//     levels deep (but the suite's throwaway home and binaries, and the per-user
//     directories kept by design: leftover.KeptByDesign);
//   - cgroups named devsandbox-* (session cgroups, systemd scopes) in every hierarchy.
// A leftover is named with the test whose project it names (suiteOwners). When the
// suite ran alone it fails, and removes what it can: the containers, volumes and
// networks; the processes, mounts and state that name the suite's directories; empty
// cgroups. When another suite holds suiteImagesLock the differences may be its runs':
// they are only reported.

// suiteOwners are the tests' projects (newProject).
var suiteOwners leftover.Owners

// ownProject records p as t's for suiteLeftovers' messages.
func ownProject(t interface{ Name() string }, p *project) {
	name := p.name()
	suiteOwners.Add(t.Name(), p.root, name, name[strings.LastIndexByte(name, '-')+1:])
}

// suiteState is what recordSuiteLeft found.
type suiteState struct {
	engines  map[string]engineLists // by engine address; "podman": the test user's podman
	procs    map[string]bool        // leftover.Proc keys
	mounts   []string               // leftover.MountKeys of the host's mount table
	state    []string               // state entries (stateEntries)
	cgroups  []string
	recorded bool
}

type engineLists struct{ containers, volumes, networks []string }

var suiteFirst suiteState

// podmanEngine is the key of the test user's podman storage in suiteState.engines.
const podmanEngine = "podman"

// recordSuiteLeft takes what suiteLeftovers compares with, after setup (which starts
// podman's pause process and may make the per-user directories).
func recordSuiteLeft() {
	start := time.Now()
	suiteFirst = suiteState{engines: map[string]engineLists{}, recorded: true}
	for _, a := range suiteLeftEngines() {
		if l, err := listEngine(a); err == nil {
			suiteFirst.engines[a] = l
		} else {
			fmt.Fprintf(os.Stderr, "integration: %s is not checked for leftovers: %v\n", a, err)
		}
	}
	ps := hostProcs()
	suiteFirst.procs = map[string]bool{}
	for _, p := range ps {
		suiteFirst.procs[p.Key()] = true
	}
	suiteFirst.mounts = hostMounts()
	suiteFirst.state = stateEntries()
	suiteFirst.cgroups = sessionCgroups()
	fmt.Fprintf(os.Stderr, "integration: recorded what the suite's end compares (%s)\n", time.Since(start).Round(time.Millisecond))
}

// suiteLeftEngines are the docker engines, and the test user's podman when the krun
// runs can use it.
func suiteLeftEngines() []string {
	es := suiteEngines()
	if podmanReady == "" {
		es = append(es, podmanEngine)
	}
	return es
}

// engineCLI runs docker against the engine at addr, or podman as the test user.
func engineCLI(addr string, args ...string) (string, error) {
	if addr == podmanEngine {
		return podmanAs(args...)
	}
	cmd := exec.Command("docker", args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+addr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return strings.TrimSpace(string(out)), nil
}

// listEngine lists the IDs of the containers, the names of the volumes and the IDs of
// the networks of the engine at addr (podman: no networks; devsandbox makes none).
func listEngine(addr string) (engineLists, error) {
	var l engineLists
	out, err := engineCLI(addr, "ps", "-aq", "--no-trunc")
	if err != nil {
		return l, err
	}
	l.containers = idLines(out)
	if out, err = engineCLI(addr, "volume", "ls", "-q"); err != nil {
		return l, err
	}
	l.volumes = slices.DeleteFunc(idLines(out), func(v string) bool { return v == "devsandbox-mask" })
	if addr != podmanEngine {
		if out, err = engineCLI(addr, "network", "ls", "-q", "--no-trunc"); err != nil {
			return l, err
		}
		l.networks = idLines(out)
	}
	return l, nil
}

// idLines are the words of a listing, without the warnings podman may print before it.
func idLines(out string) []string {
	var ids []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 1 {
			ids = append(ids, f[0])
		}
	}
	return ids
}

// hostProcs lists every process of the host.
func hostProcs() []leftover.Proc {
	ents, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var out []leftover.Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := "/proc/" + e.Name()
		var st syscall.Stat_t
		b, err := os.ReadFile(dir + "/stat")
		if err != nil || syscall.Stat(dir, &st) != nil {
			continue // gone
		}
		comm, state, ppid, start, ok := leftover.ParseStat(b)
		if !ok {
			continue
		}
		p := leftover.Proc{Pid: pid, PPid: ppid, UID: int(st.Uid), Start: start, State: state, Exe: exeBase(dir)}
		if p.Exe == "" {
			p.Exe = comm
		}
		argv, _ := os.ReadFile(dir + "/cmdline")
		p.Args = strings.ReplaceAll(strings.TrimRight(string(argv), "\x00"), "\x00", " ")
		p.Cwd, _ = os.Readlink(dir + "/cwd")
		out = append(out, p)
	}
	return out
}

// hostMounts lists the mount table of the suite's mount namespace, the host's.
func hostMounts() []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	return leftover.MountKeys(mountinfo.Parse(b))
}

// stateRoots are the directories stateEntries lists, two levels deep.
func stateRoots() []string { return []string{"/tmp", "/var/tmp", "/dev/shm", runtimeDir()} }

// stateEntries lists the entries of stateRoots that may be devsandbox's
// (leftover.StateCandidate), with the suite's own directories and what is kept by
// design left out; below a directory of another's (a root's build) it does not look.
func stateEntries() []string {
	h := leftover.Host{UID: it.uid, RuntimeDir: runtimeDir()}
	var out []string
	for _, root := range stateRoots() {
		ents, _ := os.ReadDir(root)
		for _, e := range ents {
			p := filepath.Join(root, e.Name())
			if p == it.home || p == it.tmp || p == suiteImagesLock || p == recordDir {
				continue
			}
			var st syscall.Stat_t
			if syscall.Lstat(p, &st) != nil || !leftover.StateCandidate(e.Name(), int(st.Uid), it.uid) {
				continue
			}
			if !leftover.KeptByDesign(p, h) {
				out = append(out, p)
			}
			if !e.IsDir() {
				continue
			}
			sub, _ := os.ReadDir(p)
			for _, s := range sub {
				if q := filepath.Join(p, s.Name()); !leftover.KeptByDesign(q, h) {
					out = append(out, q)
				}
			}
		}
	}
	return out
}

// sessionCgroups lists the cgroups named devsandbox-* in every hierarchy.
func sessionCgroups() []string {
	var out []string
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), "devsandbox-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// suiteDirs are the directories that are the suite's alone: what names one is its.
func suiteDirs() []string {
	return []string{it.home, it.tmp, filepath.Join(runtimeDir(), "devsandbox"), fmt.Sprintf("/dev/shm/devsandbox-%d", it.uid), fmt.Sprintf("/tmp/devsandbox-%d-", it.uid)}
}

func namesSuiteDir(s string) bool {
	return slices.ContainsFunc(suiteDirs(), func(d string) bool { return d != "" && strings.Contains(s, d) })
}

// likely names the test a leftover described by s most likely comes from.
func likely(s string) string {
	if t := suiteOwners.Of(s); t != "" {
		if f := leftover.Family(t); f != t {
			return "likely from the " + f + " family: " + t + ", whose project it names"
		}
		return "likely from " + t + ", whose project it names"
	}
	return "names no test's project"
}

// settleLeft calls list until it returns nothing or d has passed (what a run that just
// ended still removes), and returns its last answer.
func settleLeft(d time.Duration, list func() []string) []string {
	deadline := time.Now().Add(d)
	for {
		left := list()
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(250 * time.Millisecond) // polling for what the ending runs remove, bounded above
	}
}

// suiteLeftovers compares the host with what recordSuiteLeft found (see the top of
// this file), says on stderr what the suite left, removes what it can, and returns
// false when the suite left something while it ran alone.
func suiteLeftovers() bool {
	if !suiteFirst.recorded {
		return true
	}
	// First the podman services of the suite's runs end, as they do 10 s after their
	// last run (what cleanup waited for before these checks).
	if it.home != "" && it.home != it.realHome {
		endSuiteServices()
	}
	start := time.Now()
	defer func() {
		fmt.Fprintf(os.Stderr, "integration: the suite's leftover checks took %s\n", time.Since(start).Round(time.Millisecond))
	}()
	others := suiteStart.lock == nil || syscall.Flock(int(suiteStart.lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil
	var found []string // one line each: what, where, whose, what was done
	report := func(what, removed string) {
		found = append(found, what+" ("+likely(what)+"; "+removed+")")
	}
	remove := func(do func() error) string {
		if others {
			return "left: another suite is running"
		}
		if err := do(); err != nil {
			return "not removed: " + err.Error()
		}
		return "removed"
	}

	// Containers first: a volume a container uses cannot go before it.
	listed := map[string]bool{}
	for _, a := range suiteLeftEngines() {
		before, ok := suiteFirst.engines[a]
		if !ok {
			continue
		}
		var err error
		left := settleLeft(3*time.Second, func() []string {
			var now engineLists
			if now, err = listEngine(a); err != nil {
				return nil
			}
			return leftover.Appeared(before.containers, now.containers)
		})
		if err != nil {
			fmt.Fprintf(os.Stderr, "integration: the leftovers in %s could not be listed at the suite's end: %v\n", a, err)
			continue
		}
		listed[a] = true
		for _, id := range left {
			what, _ := engineCLI(a, "container", "inspect", "-f", "{{.Name}} {{.State.Status}} {{json .Config.Labels}}", id)
			report(fmt.Sprintf("container %s %s in %s", id[:min(12, len(id))], what, a), remove(func() error {
				_, err := engineCLI(a, "rm", "-f", "-v", id)
				return err
			}))
		}
	}
	for _, a := range suiteLeftEngines() {
		if !listed[a] {
			continue
		}
		before := suiteFirst.engines[a]
		now, err := listEngine(a)
		if err != nil {
			fmt.Fprintf(os.Stderr, "integration: the leftovers in %s could not be listed at the suite's end: %v\n", a, err)
			continue
		}
		for _, v := range leftover.Appeared(before.volumes, now.volumes) {
			what, _ := engineCLI(a, "volume", "inspect", "-f", "{{.Name}} {{json .Labels}}", v)
			kind := "volume"
			if sessionVolume.MatchString(v) {
				kind = "session endpoint volume" // suitevolumes_test.go
			}
			report(fmt.Sprintf("%s %s in %s", kind, what, a), remove(func() error {
				_, err := engineCLI(a, "volume", "rm", v)
				return err
			}))
		}
		for _, n := range leftover.Appeared(before.networks, now.networks) {
			what, _ := engineCLI(a, "network", "inspect", "-f", "{{.Name}} {{json .Labels}}", n)
			report(fmt.Sprintf("network %s in %s", what, a), remove(func() error {
				_, err := engineCLI(a, "network", "rm", n)
				return err
			}))
		}
	}

	// Processes.
	var procs []leftover.Proc
	settleLeft(3*time.Second, func() []string {
		keep := map[int]bool{}
		if b, err := os.ReadFile(filepath.Join(runtimeDir(), "libpod", "tmp", "pause.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				keep[pid] = true
			}
		}
		procs = leftover.LeftProcs(suiteFirst.procs, hostProcs(), it.uid, keep)
		var s []string
		for _, p := range procs {
			s = append(s, p.String())
		}
		return s
	})
	for _, p := range procs {
		removed := "left: it names none of the suite's directories"
		if namesSuiteDir(p.Args+" "+p.Cwd) || procHome(p.Pid) == it.home {
			removed = remove(func() error { return syscall.Kill(p.Pid, syscall.SIGKILL) })
		}
		report("process "+p.String(), removed)
	}

	for _, m := range settleLeft(2*time.Second, func() []string { return leftover.Appeared(suiteFirst.mounts, hostMounts()) }) {
		removed := "left: not below the suite's directories"
		if namesSuiteDir(leftover.MountPoint(m)) {
			removed = remove(func() error { return syscall.Unmount(leftover.MountPoint(m), syscall.MNT_DETACH) })
		}
		report("mount "+m, removed)
	}

	for _, c := range leftover.Appeared(suiteFirst.cgroups, sessionCgroups()) {
		report("cgroup "+c, remove(func() error { return syscall.Rmdir(c) }))
	}

	for _, s := range leftover.Collapse(leftover.Appeared(suiteFirst.state, stateEntries())) {
		removed := "left: not devsandbox's by its name"
		if strings.Contains(s, "devsandbox") || namesSuiteDir(s) {
			removed = remove(func() error { return os.RemoveAll(s) })
		}
		report("state "+s, removed)
	}

	if len(found) == 0 {
		return true
	}
	if others {
		fmt.Fprintf(os.Stderr, "integration: %d things that were not there at the suite's start; another suite is running (%s), they may be its runs':\n  %s\n", len(found), suiteImagesLock, strings.Join(found, "\n  "))
		return true
	}
	fmt.Fprintf(os.Stderr, "FAIL: the suite's runs left %d things running, mounted or stored after devsandbox exited:\n  %s\n", len(found), strings.Join(found, "\n  "))
	return false
}

// procHome is the HOME in the environment of process pid, "" when unreadable.
func procHome(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return ""
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if h, ok := strings.CutPrefix(kv, "HOME="); ok {
			return h
		}
	}
	return ""
}
