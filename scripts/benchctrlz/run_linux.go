package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/procs"
	"github.com/devsandbox/devsandbox/isolator/tty"
	"github.com/devsandbox/devsandbox/scripts/benchrun"
)

// What each run does: the shell runs devsandbox as a job, prints its status once the
// job stopped, continues it and prints its end; the command starts a sleep (the
// process -dstate holds), says ready, reads its line and ends the sleep.
const (
	jobShell = `"$@"; echo "status[$?]"; fg %1 >/dev/null; echo "end[$?]"`
	want     = "ready\nstatus[148]\ncmd[go]\nend[0]\n"
	// runTimeout ends a run that hangs (its session is killed).
	runTimeout = 60 * time.Second
	// localEngine is the docker variant's engine (its runs name none).
	localEngine = "unix:///var/run/docker.sock"
	freezerRoot = "/sys/fs/cgroup/freezer"
)

// bench is the benchmark's setup: who runs, where, with which devsandbox.
type bench struct {
	o        options
	bin      string // the user's copy of devsandbox
	home     string // the throwaway home of every run
	realHome string // the user's own home (its podman configuration and storage)
	name     string
	uid, gid int
	cred     *syscall.Credential // nil when not root: the runs are this process's user's
	env      []string            // every run's environment
	version  string              // the devsandbox version
	// podmanReady is whether the throwaway home has the user's podman configuration;
	// loaded, whether this benchmark loaded the image into the user's podman storage.
	podmanReady, loaded bool
}

// subject is one isolator's runs.
type subject struct {
	iso    string
	proj   string
	args   []string // devsandbox's before "--"
	env    []string
	engine string          // docker variants: the engine's address
	before map[string]bool // docker variants: the engine's image IDs (without "sha256:") before the first run
	took   []time.Duration
	notes  []string // the distinct "devsandbox: " lines of its runs
}

func run(o options) error {
	if o.dstate {
		if os.Getuid() != 0 {
			return errors.New("-dstate needs root: it moves the command's sleep into a cgroup of the v1 freezer")
		}
		if fi, err := os.Stat(filepath.Join(freezerRoot, "cgroup.procs")); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("-dstate needs the cgroup v1 freezer hierarchy at %s (cgroup v2's freezer does not put a process in 'D'): %v", freezerRoot, err)
		}
	}
	dir := filepath.Dir(o.bin)
	if _, err := os.Stat(o.bin); err != nil {
		return fmt.Errorf("%w (make build makes it)", err)
	}
	var bins []string
	for _, f := range []string{"devsandbox", "devsandbox-init", "devsandbox-bwrap-init", "devsandbox-proxy", "devsandbox-docker", "devsandbox-krun"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			bins = append(bins, f)
		}
	}
	st, dropBins, err := benchrun.AsUser(o.bin, o.user, "benchctrlz-", bins, true)
	defer dropBins()
	if err != nil {
		return err
	}
	home, dropHome, err := benchrun.ThrowawayHome(st.Home, st.UID, st.GID)
	defer dropHome()
	if err != nil {
		return err
	}
	b := &bench{o: o, bin: st.Bin, home: home, realHome: st.Home, name: st.Name, uid: st.UID, gid: st.GID, cred: st.Runner.Cred}
	out, err := exec.Command(b.bin, "version").Output()
	if err != nil {
		return fmt.Errorf("%s version: %w", b.bin, err)
	}
	b.version = strings.TrimPrefix(strings.TrimSpace(string(out)), "devsandbox ")
	// The containers' home is this home, as the default /home/<user> is for a user
	// whose home that is; krun runs a plain container (no /dev/kvm here).
	if err := benchrun.WriteConfig(home, b.uid, b.gid, fmt.Sprintf("[docker]\nhome = %q\n\n[krun]\nruntime = \"runc\"\n", home)); err != nil {
		return err
	}
	b.env = []string{"HOME=" + home, "USER=" + b.name, "LOGNAME=" + b.name, "PATH=/usr/local/bin:/usr/bin:/bin",
		"LANG=C.UTF-8", "SHELL=/bin/sh", "TERM=xterm",
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_DATA_HOME=" + filepath.Join(home, ".local/share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local/state"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache")}
	if b.runtimeDirOK() {
		b.env = append(b.env, "XDG_RUNTIME_DIR="+b.runtimeDir())
	}

	var subs []*subject
	defer func() { b.cleanup(subs) }()
	for _, iso := range o.isolators {
		s, why, err := b.prepare(iso)
		if err != nil {
			return fmt.Errorf("%s: %w", iso, err)
		}
		if why != "" {
			fmt.Printf("skipping %s: %s\n", iso, why)
			continue
		}
		subs = append(subs, s)
	}
	if len(subs) == 0 {
		return errors.New("no isolator to run")
	}
	fmt.Printf("Ctrl-Z typed on an interactive bash's terminal to the shell's report of the stopped job (status 148), devsandbox %s its job, as %s; %d counted runs per isolator, alternating; image %s; D-state %v\n",
		b.version, b.name, o.n, o.image, o.dstate)
	fmt.Printf("loadavg before: %s\n", benchrun.LoadAvg())
	// Not counted: docker's first run derives the image it runs, krun's first starts
	// devsandbox's podman service.
	for _, s := range subs {
		if _, err := b.once(s); err != nil {
			return fmt.Errorf("%s, the run before the counted ones: %w", s.iso, err)
		}
	}
	for i := 0; i < o.n; i++ {
		for j := range subs {
			s := subs[(i+j)%len(subs)]
			d, err := b.once(s)
			if err != nil {
				return fmt.Errorf("%s, run %d: %w", s.iso, i+1, err)
			}
			s.took = append(s.took, d)
		}
	}
	fmt.Printf("loadavg after: %s\n", benchrun.LoadAvg())
	for _, s := range subs {
		fmt.Println(summary(s.iso, s.took))
	}
	for _, s := range subs {
		for _, n := range s.notes {
			fmt.Printf("  %s: devsandbox said %q (in one of its runs or more, the uncounted one included)\n", s.iso, n)
		}
	}
	return nil
}

// prepare makes iso's project and arguments, or says why iso cannot run here.
func (b *bench) prepare(iso string) (s *subject, why string, err error) {
	s = &subject{iso: iso, env: b.env}
	need := func(f string) string {
		if _, err := os.Stat(filepath.Join(filepath.Dir(b.bin), f)); err != nil {
			return f + " is not beside " + b.o.bin + " (make build makes it)"
		}
		return ""
	}
	switch iso {
	case "bwrap":
		if why := need("devsandbox-bwrap-init"); why != "" {
			return nil, why, nil
		}
		if _, err := exec.LookPath("bwrap"); err != nil {
			return nil, "bwrap is not installed (scripts/setup-test-env.sh installs it)", nil
		}
		s.args = []string{"--isolator=bwrap"}
	case "docker", "docker-remote":
		for _, f := range []string{"devsandbox-docker", "devsandbox-init"} {
			if why := need(f); why != "" {
				return nil, why, nil
			}
		}
		s.engine = localEngine
		if iso == "docker-remote" {
			s.engine = b.o.remote
			s.env = append(slices.Clone(b.env), "DOCKER_HOST="+s.engine)
		}
		if out, err := docker(s.engine, "version", "--format", "{{.Server.APIVersion}}"); err != nil {
			return nil, fmt.Sprintf("no docker engine at %s (scripts/setup-test-env.sh starts it): %v: %s", s.engine, err, out), nil
		}
		if out, err := docker(s.engine, "image", "inspect", "--format", "{{.Id}}", b.o.image); err != nil {
			return nil, fmt.Sprintf("%s is not in the engine at %s (scripts/setup-test-env.sh loads it): %s", b.o.image, s.engine, out), nil
		}
		out, err := docker(s.engine, "images", "-a", "-q", "--no-trunc")
		if err != nil {
			return nil, "", fmt.Errorf("listing the images at %s: %v: %s", s.engine, err, out)
		}
		s.before = map[string]bool{}
		for _, id := range strings.Fields(out) {
			s.before[strings.TrimPrefix(id, "sha256:")] = true
		}
		s.args = []string{"--isolator=docker", "--image=" + b.o.image}
	case "krun":
		for _, f := range []string{"devsandbox-krun", "devsandbox-init"} {
			if why := need(f); why != "" {
				return nil, why, nil
			}
		}
		if _, err := exec.LookPath("podman"); err != nil {
			return nil, "podman is not installed (scripts/setup-test-env.sh installs it)", nil
		}
		if !b.runtimeDirOK() {
			return nil, b.runtimeDir() + " is missing or not " + b.name + "'s (scripts/setup-test-env.sh makes it)", nil
		}
		if err := b.podmanConfig(); err != nil {
			return nil, "", err
		}
		if why, err := b.podmanImage(); why != "" || err != nil {
			return nil, why, err
		}
		s.args = []string{"--isolator=krun", "--image=" + b.o.image}
	}
	proj, err := os.MkdirTemp(b.home, "ctrlz-"+iso+"-")
	if err != nil {
		return nil, "", err
	}
	s.proj = proj
	// An empty git repository, as the integration suite's projects are.
	for _, d := range []string{".git/hooks", ".git/objects", ".git/refs"} {
		if err := os.MkdirAll(filepath.Join(proj, d), 0o755); err != nil {
			return nil, "", err
		}
	}
	for f, content := range map[string]string{".git/config": "[core]\n\trepositoryformatversion = 0\n", ".git/HEAD": "ref: refs/heads/main\n"} {
		if err := os.WriteFile(filepath.Join(proj, f), []byte(content), 0o644); err != nil {
			return nil, "", err
		}
	}
	if b.cred != nil {
		err := filepath.Walk(proj, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, b.uid, b.gid)
		})
		if err != nil {
			return nil, "", err
		}
	}
	return s, "", nil
}

// once runs the job once on s and returns the time from Ctrl-Z to the shell's
// status line.
func (b *bench) once(s *subject) (took time.Duration, err error) {
	mark := strconv.Itoa(800000 + rand.IntN(100000)) // the command's sleep, found by it
	script := `sleep ` + mark + ` & s=$!; echo ready; read -r a; kill $s; echo "cmd[$a]"`
	master, slave, err := tty.Open()
	if err != nil {
		return 0, err
	}
	defer master.Close()
	defer slave.Close()
	if b.cred != nil {
		if err := unix.Fchown(int(slave.Fd()), b.uid, b.gid); err != nil {
			return 0, fmt.Errorf("giving the terminal to %s: %w", b.name, err)
		}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer pr.Close()
	argv := append([]string{"/bin/bash", "--norc", "--noprofile", "-i", "-c", jobShell, "bash", b.bin}, s.args...)
	argv = append(argv, "--", "/bin/sh", "-c", script)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = s.proj, s.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: b.cred, Setsid: true, Setctty: true, Ctty: 0}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, pw, pw
	go func() { _, _ = io.Copy(io.Discard, master) }() // the terminal's echo
	if err := cmd.Start(); err != nil {
		pw.Close()
		return 0, err
	}
	pw.Close()
	sid := cmd.Process.Pid
	defer procs.KillSession(sid) // the shell and what is left of its jobs
	var timedOut atomic.Bool
	timer := time.AfterFunc(runTimeout, func() { timedOut.Store(true); procs.KillSession(sid) })
	defer timer.Stop()

	var t0, t1 time.Time
	thaw := func() error { return nil }
	defer func() {
		if terr := thaw(); terr != nil && err == nil {
			err = terr
		}
	}()
	var stepErr error
	step := 0
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, rerr := pr.Read(buf)
		out = append(out, buf[:n]...)
		if !strings.HasPrefix(want, withoutJobReports(out)) {
			procs.KillSession(sid) // the output is wrong already
		}
		if step == 0 && bytes.Contains(out, []byte("ready\n")) {
			step++
			if b.o.dstate {
				if thaw, stepErr = freeze(mark); stepErr != nil {
					thaw = func() error { return nil }
					procs.KillSession(sid)
				}
			}
			if stepErr == nil {
				t0 = time.Now()
				if _, err := master.Write([]byte{0x1a}); err != nil {
					return 0, err
				}
			}
		}
		if step == 1 && bytes.Contains(out, []byte("status[")) {
			step++
			t1 = time.Now()
			stepErr = thaw()
			thaw = func() error { return nil }
			if _, err := master.Write([]byte("go\n")); err != nil {
				return 0, err
			}
		}
		if rerr != nil {
			break
		}
	}
	werr := cmd.Wait()
	if timedOut.Load() {
		return 0, fmt.Errorf("the run did not end within %s; its output: %q", runTimeout, out)
	}
	if stepErr != nil {
		return 0, stepErr
	}
	if got := withoutJobReports(out); got != want {
		return 0, fmt.Errorf("output %q, want %q (the shell ended: %v); its whole output: %q", got, want, werr, out)
	}
	if left := procs.WithArgs("sleep", mark); len(left) > 0 {
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return 0, fmt.Errorf("the command's sleep %s was left running after the run (pids %v, now killed)", mark, left)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimRight(l, "\r"); strings.HasPrefix(l, "devsandbox: ") && !slices.Contains(s.notes, l) {
			s.notes = append(s.notes, l)
		}
	}
	return t1.Sub(t0), nil
}

// freeze holds the process whose argv is `sleep mark` in uninterruptible sleep: it
// moves it into a new cgroup of the v1 freezer and freezes that. thaw thaws it, moves
// it back to the freezer cgroup it came from (a container's: a paused one freezes
// it again, as it would have been) and removes the new one; once only.
func freeze(mark string) (thaw func() error, err error) {
	var pids []int
	if err := waitFor(func() bool { pids = procs.WithArgs("sleep", mark); return len(pids) == 1 }); err != nil {
		return nil, fmt.Errorf("the command's sleep %s: %w", mark, err)
	}
	pid := strconv.Itoa(pids[0])
	back := freezerRoot
	if rel := freezerCgroup(pids[0]); rel != "" {
		back = filepath.Join(freezerRoot, rel)
	}
	dir, err := os.MkdirTemp(freezerRoot, "benchctrlz-")
	if err != nil {
		return nil, fmt.Errorf("a cgroup of the v1 freezer: %w", err)
	}
	done := false
	thaw = func() error {
		if done {
			return nil
		}
		done = true
		var errs []error
		if err := os.WriteFile(filepath.Join(dir, "freezer.state"), []byte("THAWED"), 0); err != nil {
			errs = append(errs, fmt.Errorf("thawing the command's sleep: %w", err))
		}
		if err := os.WriteFile(filepath.Join(back, "cgroup.procs"), []byte(pid), 0); err != nil && !errors.Is(err, syscall.ESRCH) {
			// Its own cgroup went (the container ended): the root one.
			if err := os.WriteFile(filepath.Join(freezerRoot, "cgroup.procs"), []byte(pid), 0); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("moving the command's sleep out of %s: %w", dir, err))
			}
		}
		if err := os.Remove(dir); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", dir, err))
		}
		return errors.Join(errs...)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(pid), 0); err != nil {
		return nil, errors.Join(fmt.Errorf("moving the command's sleep into %s: %w", dir, err), thaw())
	}
	if err := os.WriteFile(filepath.Join(dir, "freezer.state"), []byte("FROZEN"), 0); err != nil {
		return nil, errors.Join(fmt.Errorf("freezing the command's sleep: %w", err), thaw())
	}
	if err := waitFor(func() bool { return procs.State(pids[0]) == "D" }); err != nil {
		return nil, errors.Join(fmt.Errorf("the command's sleep in 'D': %w", err), thaw())
	}
	return thaw, nil
}

// freezerCgroup is pid's cgroup in the v1 freezer hierarchy, "" when unknown.
func freezerCgroup(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.SplitN(l, ":", 3); len(f) == 3 && slices.Contains(strings.Split(f[1], ","), "freezer") {
			return f[2]
		}
	}
	return ""
}

// waitFor polls cond, a state of other processes that sends no event, up to 10s.
func waitFor(cond func() bool) error {
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			return errors.New("not within 10s")
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// withoutJobReports is the complete lines of out that are not a shell's job reports
// (nor the empty line before one), nor devsandbox's notes.
func withoutJobReports(out []byte) string {
	var kept []byte
	for _, l := range bytes.SplitAfter(out, []byte("\n")) {
		if bytes.HasSuffix(l, []byte("\n")) && len(l) > 1 && !bytes.HasPrefix(l, []byte("[")) && !bytes.HasPrefix(l, []byte("devsandbox: ")) {
			kept = append(kept, l...)
		}
	}
	return string(kept)
}

func (b *bench) runtimeDir() string { return fmt.Sprintf("/run/user/%d", b.uid) }

// runtimeDirOK says whether the user's runtime directory is there and the user's.
func (b *bench) runtimeDirOK() bool {
	fi, err := os.Stat(b.runtimeDir())
	return err == nil && fi.IsDir() && int(fi.Sys().(*syscall.Stat_t).Uid) == b.uid
}

// docker runs root's (or this user's) docker CLI against engine.
func docker(engine string, args ...string) (string, error) {
	cmd := exec.Command("docker", args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+engine)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// podman runs the podman CLI as the user with HOME=home.
func (b *bench) podman(home string, args ...string) (string, error) {
	cmd := exec.Command("podman", args...)
	cmd.Dir = "/"
	cmd.Env = []string{"HOME=" + home, "USER=" + b.name, "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "XDG_RUNTIME_DIR=" + b.runtimeDir()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: b.cred}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// podmanConfig gives the throwaway home the user's podman configuration
// (~/.config/containers, the krun runtime's registration among it) and, as its
// storage.conf, one naming the storage the user's own podman uses (asked with the own
// home), as the integration suite does: krun's runs find the image there.
func (b *bench) podmanConfig() error {
	if b.podmanReady {
		return nil
	}
	out, err := b.podman(b.realHome, "info", "--format", "{{.Store.GraphDriverName}} {{.Store.GraphRoot}}") // may include warnings
	driver, root, _ := strings.Cut(out[strings.LastIndex(out, "\n")+1:], " ")
	if err != nil || driver == "" || !filepath.IsAbs(root) {
		return fmt.Errorf("%s's podman storage: podman info: %v: %s", b.name, err, out)
	}
	dir := filepath.Join(b.home, ".config", "containers")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	own := filepath.Join(b.realHome, ".config", "containers")
	entries, err := os.ReadDir(own)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	files := map[string][]byte{"storage.conf": fmt.Appendf(nil, "[storage]\ndriver = %q\nrootless_storage_path = %q\n", driver, root)}
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name() != "storage.conf" {
			if files[e.Name()], err = os.ReadFile(filepath.Join(own, e.Name())); err != nil {
				return err
			}
		}
	}
	for name, data := range files {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, data, 0o644); err != nil {
			return err
		}
		if err := os.Lchown(f, b.uid, b.gid); err != nil && b.cred != nil {
			return err
		}
	}
	if err := os.Lchown(dir, b.uid, b.gid); err != nil && b.cred != nil {
		return err
	}
	b.podmanReady = true
	return nil
}

// podmanImage makes sure the image is in the user's podman storage: loaded from the
// docker engine when it is not (and removed again at the end), or says why it cannot be.
func (b *bench) podmanImage() (why string, err error) {
	if _, err := b.podman(b.home, "image", "exists", b.o.image); err == nil {
		return "", nil
	}
	f, err := os.CreateTemp("", "benchctrlz-image-*.tar")
	if err != nil {
		return "", err
	}
	f.Close()
	defer os.Remove(f.Name())
	if out, err := docker(localEngine, "save", "-o", f.Name(), b.o.image); err != nil {
		return fmt.Sprintf("%s is in neither %s's podman storage nor the docker engine at %s: %v: %s", b.o.image, b.name, localEngine, err, out), nil
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return "", err
	}
	if out, err := b.podman(b.home, "load", "-q", "-i", f.Name()); err != nil {
		return "", fmt.Errorf("podman load %s: %v: %s", b.o.image, err, out)
	}
	b.loaded = true
	return "", nil
}

// projectName is the project's name as devsandbox derives it: <basename>-<short hash
// of its path>.
func projectName(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return filepath.Base(dir) + "-" + hex.EncodeToString(sum[:4])
}

// cleanup removes what the runs left: each project's sandbox (its containers and
// volumes on the docker variants' engines, its socket directory), krun containers of
// a project if any, the images the docker runs derived, the podman service
// devsandbox started, and the image loaded into the user's podman storage. It says on
// stderr what it could not remove.
func (b *bench) cleanup(subs []*subject) {
	warn := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "benchctrlz: cleanup: "+format+"\n", a...) }
	krun := false
	for _, s := range subs {
		name := projectName(s.proj)
		r := benchrun.Runner{Cred: b.cred, Env: s.env, Dir: b.home}
		if _, err := r.Time([]string{b.bin, "sandboxes", "rm", name}); err != nil && !strings.Contains(err.Error(), "no sandbox named") {
			warn("devsandbox sandboxes rm %s (%s): %v", name, s.iso, err)
		}
		switch s.iso {
		case "krun":
			krun = true
			id := name[strings.LastIndexByte(name, '-')+1:]
			out, err := b.podman(b.home, "ps", "-aq", "--filter", "label=dev.devsandbox.project="+id)
			if err != nil {
				warn("podman ps (%s): %v: %s", name, err, out)
				break
			}
			for _, c := range strings.Fields(out) {
				if out, err := b.podman(b.home, "rm", "-f", c); err != nil {
					warn("podman rm -f %s: %v: %s", c, err, out)
				}
			}
		case "docker", "docker-remote":
			b.removeDerived(s, warn)
		}
	}
	if krun {
		b.endServices(warn)
	}
	if b.loaded {
		if out, err := b.podman(b.home, "rmi", b.o.image); err != nil {
			warn("podman rmi %s (loaded for krun's runs): %v: %s", b.o.image, err, out)
		}
	}
}

// removeDerived removes from s's engine the images this benchmark's runs derived
// there: those its derived-image cache (docker-images.json in the throwaway home's
// state) names that the engine did not have before the first run. The cache names
// only what these runs made or used, so nothing another run made at the same time is
// touched, whatever its version or user.
func (b *bench) removeDerived(s *subject, warn func(string, ...any)) {
	cache := filepath.Join(b.home, ".local/state/devsandbox/docker-images.json")
	data, err := os.ReadFile(cache)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	m := map[string]string{}
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	if err != nil {
		warn("the derived images at %s are left: reading %s: %v", s.engine, cache, err)
		return
	}
	for _, id := range m {
		if id == "" || s.before[strings.TrimPrefix(id, "sha256:")] {
			continue
		}
		tags, err := docker(s.engine, "image", "inspect", "--format", "{{json .RepoTags}}", id)
		if err != nil {
			continue // not on this engine (or gone)
		}
		refs := []string{id}
		var names []string
		if json.Unmarshal([]byte(tags), &names) == nil && len(names) > 0 {
			refs = names
		}
		if out, err := docker(s.engine, append([]string{"image", "rm"}, refs...)...); err != nil {
			warn("removing the derived image %s at %s: %v: %s", id, s.engine, err, out)
		}
	}
}

// endServices waits up to 25 s for the podman services devsandbox started for the
// krun runs (and their supervisors) to end on their own, 10 s after their last
// use (krun.ServiceIdle), and kills those still there.
func (b *bench) endServices(warn func(string, ...any)) {
	deadline := time.Now().Add(25 * time.Second)
	for {
		pids := procs.OfUserWithEnv(b.uid, "HOME="+b.home, "system service", "devsandbox-krun supervise")
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			warn("the podman services %v outlived the last run by 25s: killing them", pids)
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(250 * time.Millisecond) // polling for their end, bounded above
	}
}
