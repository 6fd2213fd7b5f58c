package krun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	spec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/isolator/pin"
)

// ServiceIdle is how long a podman service devsandbox started outlives its last user:
// it serves the runs that follow within that time, and then its supervisor ends it, so
// a devsandbox that was killed never leaves it running.
const ServiceIdle = 10 * time.Second

// Host is the host access of the backend (a struct of functions in tests).
type Host interface {
	// KVM opens /dev/kvm for reading and writing.
	KVM() error
	// HardLimits returns the hard RLIMIT_NOFILE and RLIMIT_NPROC (0: unlimited).
	HardLimits() (nofile, nproc uint64)
	// Listening reports whether a Unix socket at path accepts connections.
	Listening(path string) bool
	// StartService starts `podman --runtime RUNTIME system service` on path, with
	// podman, the program podmanStartable judged (never another lookup of PATH:
	// PATH's answer may have changed since), and returns once it listens.
	StartService(ctx context.Context, path, runtime, podman string) error
	// ServiceLimits returns the pid of the process listening on the socket at path and
	// its hard rlimits by spec name ("nofile", "nproc"; 0: unlimited); pid 0 when it
	// cannot be told.
	ServiceLimits(path string) (pid int, hard map[string]uint64, err error)
	// ServiceRlimits returns the soft and hard rlimits of the process listening on
	// the socket at path, every one its /proc/PID/limits shows (ownLimits).
	ServiceRlimits(path string) ([]spec.POSIXRlimit, error)
	// StopService ends the idle service devsandbox started on path, whose listener
	// is pid, and returns once its supervisor is gone.
	StopService(path string, pid int) error
	// Systemd reports whether systemd is the init (else podman needs cgroupfs).
	Systemd() bool
	// Pin prepares p's host side and opens every bind source (package pin); it
	// returns the Plan with their identities, the host's boot id, and the pinned
	// sources, closed, which tell a failed setup whether one of them went away
	// meanwhile (pin.Set.Gone).
	Pin(p *isolator.Plan) (*isolator.Plan, string, *pin.Set, error)
	// StageAnchors binds each pinned anchor inside podman's namespaces (nsenter is
	// the host's) and returns the paths podman binds instead, by anchor path; stop
	// releases them once the container runs or will not.
	StageAnchors(runtimeDir, nsenter string, as []Anchor) (staged map[string]string, stop func(), err error)
	// LockCreate takes the exclusive lock at path (see create), waiting while another
	// run holds it; unlock releases it.
	LockCreate(ctx context.Context, path string) (unlock func(), err error)
	// MarkRun marks the project whose state directory is stateDir as in use until
	// release: `devsandbox sandboxes prune` keeps it whatever --days says. mark is the
	// mark's file ("" where runs hold no mark), locked until release. It is made under
	// the project's lock: while prune or rm holds that, the wait is said on stderr and
	// ends with ctx or a signal from sigs.
	MarkRun(ctx context.Context, stateDir string, stderr io.Writer, sigs <-chan handoff.Signal) (mark string, release func(), err error)
}

type osHost struct{}

func (osHost) KVM() error {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

func (osHost) HardLimits() (nofile, nproc uint64) {
	var r unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &r) == nil && r.Max != unix.RLIM_INFINITY {
		nofile = r.Max
	}
	if unix.Getrlimit(unix.RLIMIT_NPROC, &r) == nil && r.Max != unix.RLIM_INFINITY {
		nproc = r.Max
	}
	return nofile, nproc
}

func (osHost) ServiceLimits(path string) (int, map[string]uint64, error) {
	return serviceLimits(path)
}

func (osHost) ServiceRlimits(path string) ([]spec.POSIXRlimit, error) {
	return serviceRlimits(path)
}

func (osHost) StopService(path string, pid int) error { return stopService(path, pid) }

func (osHost) Listening(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func (osHost) Pin(p *isolator.Plan) (*isolator.Plan, string, *pin.Set, error) {
	if err := isolator.PrepareHost(p); err != nil {
		return nil, "", nil, err
	}
	pins, err := pin.Plan(p)
	if err != nil {
		return nil, "", nil, err
	}
	// podman binds by path: only the identities are kept (the anchors are opened
	// again where they are staged).
	pins.Close()
	pp, _ := pins.Apply()
	return pp, pin.BootID(), pins, nil
}

func (osHost) Systemd() bool {
	_, err := os.Stat("/run/systemd/system")
	return err == nil
}

// StartService starts podman's API service for runtime on path under a supervisor
// (`devsandbox-krun supervise`), detached (its own session, so neither a terminal's
// signals nor devsandbox's end reach it), and returns once it listens. Concurrent
// starts are serialised by a lock next to the socket. podman is the program judged
// (podmanStartable; "" when PATH has none): the supervisor finds it first on the PATH
// it gets (serviceEnv).
func (h osHost) StartService(ctx context.Context, path, runtime, podman string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	lockPath := filepath.Join(dir, "devsandbox-service.lock")
	lock, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR|unix.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		if err := plantedLock(lockPath, err); errors.Is(err, isolator.ErrProtection) {
			return err
		}
		return fmt.Errorf("opening %s: %w", lockPath, err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	if h.Listening(path) {
		return nil // another devsandbox started it meanwhile
	}
	sweepSets(dir, h.Listening)
	_ = os.Remove(path) // a stale socket of a service that exited
	if podman == "" {
		return fmt.Errorf("%w: podman is not installed: %w", isolator.ErrUnavailable, exec.ErrNotFound)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logPath := serviceLog(path)
	log, err := openServiceLog(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(self, SuperviseArg, path, runtime)
	cmd.Env = serviceEnv(os.Environ(), podman)
	if _, ok := os.LookupEnv("XDG_RUNTIME_DIR"); !ok && strings.HasPrefix(path, "/run/user/") {
		// Rootless podman keeps its state there; say so rather than let it guess.
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+filepath.Dir(filepath.Dir(path)))
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting podman system service: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-exited: // the supervisor's status says nothing podman's log does not
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("podman system service exited: %s (see %s)", podmanError(b), logPath)
		case <-deadline.C:
			return fmt.Errorf("podman system service did not listen on %s within 15s (see %s)", path, logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if h.Listening(path) {
				return nil // the service runs on under its supervisor
			}
		}
	}
}

// serviceArgs is podman's argv for the API service with the runtime. Without systemd
// as init, podman's default systemd cgroup manager cannot work; cgroupfs does.
func serviceArgs(systemd bool, runtime, path string) []string {
	args := []string{"--runtime=" + runtime}
	if !systemd {
		args = append(args, "--cgroup-manager=cgroupfs")
	}
	// No idle timeout of podman's own: podman 4.3 miscounts hijacked (attach)
	// connections and may never see itself idle. The supervisor ends it.
	return append(args, "system", "service", "--time=0", "unix://"+path)
}

// podmanError is podman's own last message in the service log: the supervisor's
// closing line ("podman system service ended: exit status 125") says only that it
// failed, and the reason (`default OCI runtime "krun" not found`) comes before it.
func podmanError(log []byte) string {
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, superviseLogPrefix) {
			return l
		}
	}
	return lines[len(lines)-1]
}

// socketPath is the podman API socket the backend uses: krun.podman_socket when set,
// else the service devsandbox runs for the runtime. podman picks the OCI runtime per
// service (`podman --runtime NAME system service`; the API ignores a container's own
// choice), so a user's general podman.sock would run a plain container, not a VM:
// devsandbox keeps a socket per runtime next to it, under $XDG_RUNTIME_DIR/podman
// (/run/user/UID without it; /run/podman for root).
//
// key (serviceKey) is "" for podman's usual storage and configuration; otherwise the
// socket is devsandbox-<runtime>-<key>.sock, a service of its own for that
// environment.
func socketPath(configured, runtimeDir string, uid int, runtime, key string) string {
	if configured != "" {
		return strings.TrimPrefix(configured, "unix://")
	}
	name := "devsandbox-" + runtime
	if key != "" {
		name += "-" + key
	}
	return filepath.Join(podmanRuntimeDir(runtimeDir, uid), "podman", name+".sock")
}

// podmanRuntimeDir is podman's runtime directory: $XDG_RUNTIME_DIR, else
// /run/user/UID (root: /run), as podman picks it.
func podmanRuntimeDir(runtimeDir string, uid int) string {
	switch {
	case runtimeDir != "":
		return runtimeDir
	case uid != 0:
		return filepath.Join("/run/user", strconv.Itoa(uid))
	default:
		return "/run"
	}
}

// turnFile is the lock runs take, one at a time, to decide about the service on
// sock: use it, restart it or start one (see socket).
func turnFile(sock string) string { return sock + ".turn" }

// socket returns the listening API socket, starting a service for the runtime when
// none listens (not for a configured socket, which is the user's to run). want are
// the rlimits the run's container asks (wantedLimits; nil: no container), which the
// service must be able to give (serviceFits).
//
// The decision about devsandbox's own service is taken under its turn (turnFile),
// one run at a time, and a run takes the service's users lock only there: every
// other holder of the users lock is then a run that has already decided to use the
// service as it is. Two runs that meet a service below their limits at once so take
// turns: the first restarts it, the second waits for its turn and finds the new
// service, which it uses. Without the turn each held the users lock while it looked,
// saw the other's, and both were refused as if a session used the service.
func (b *Isolator) socket(ctx context.Context, h Host, want []spec.POSIXRlimit) (string, error) {
	s := b.Settings
	p := b.socketName()
	if s.Socket != "" {
		if !h.Listening(p) {
			return "", fmt.Errorf("%w: nothing listens on krun.podman_socket %s; start `podman --runtime %s system service unix://%s`, or unset krun.podman_socket to let devsandbox run one", isolator.ErrUnavailable, p, s.Runtime, p)
		}
		if _, err := b.serviceFits(h, p, want); err != nil {
			return "", err
		}
		return p, nil
	}
	// Before the turn and the users lock, whose files a refused run would leave: a
	// podman the run's sandbox could have planted refuses the run even where a
	// service already listens (it is on PATH all the same, for the next start).
	podman, err := b.podmanStartable()
	if err != nil {
		return "", err
	}
	unlock, err := lockFile(ctx, turnFile(p), b.turnWaiting)
	if err != nil {
		return "", lockErr(ctx, "the turn to use podman's service", p, err)
	}
	defer unlock()
	if b.users == nil {
		// Held (shared) for the Isolator's life: the service's supervisor ends the
		// service only once no devsandbox holds it.
		f, err := holdUsers(ctx, p, nil)
		if err != nil {
			return "", lockErr(ctx, "the users lock of podman's service", p, err)
		}
		b.users = f
	}
	if h.Listening(p) {
		stopped, err := b.serviceFits(h, p, want)
		if err != nil {
			return "", err
		}
		if !stopped {
			return p, nil
		}
	}
	if err := h.StartService(ctx, p, s.Runtime, podman); err != nil {
		if errors.Is(err, isolator.ErrUnavailable) || errors.Is(err, isolator.ErrProtection) {
			return "", err
		}
		return "", fmt.Errorf("%w: podman's API service could not be started on %s: %w", isolator.ErrUnavailable, p, err)
	}
	b.phase("podman service")
	return p, nil
}

// lockErr is the error of waiting for the lock what of the service on p.
func lockErr(ctx context.Context, what, p string, err error) error {
	if errors.Is(err, isolator.ErrProtection) {
		return err // a link planted at the lock: it says which and what to do
	}
	if ctx.Err() != nil {
		// The run ended: not an isolator that cannot run, which mode auto would run
		// unsandboxed.
		return fmt.Errorf("waiting for %s %s: %w", what, p, err)
	}
	return fmt.Errorf("%w: %w", isolator.ErrUnavailable, err)
}

// serviceFits checks that the service listening on p can give the container the
// rlimits the spec asks (want): runc, which the service starts, cannot raise a hard
// limit above the service's, and fails with "error setting rlimit type 7 (nofile; 6:
// nproc): operation not permitted". A service inherits the limits of the devsandbox
// that started it, so one started under a low `ulimit -n` or `ulimit -u` (a
// constrained session, a prlimit) cannot serve a later run with higher ones. Such a
// service of devsandbox's that no other devsandbox uses is stopped (stopped true: the
// caller starts a new one, with this run's limits); one that others use is left to
// them, and the run stops with an error that names each short limit, both values,
// the pid and what to do; a krun.podman_socket's is the user's to restart. The
// caller holds the service's turn (socket).
func (b *Isolator) serviceFits(h Host, p string, want []spec.POSIXRlimit) (stopped bool, err error) {
	if len(want) == 0 {
		return false, nil
	}
	pid, have, err := h.ServiceLimits(p)
	if err != nil || pid == 0 {
		// Limits that cannot be read are not taken for short ones: the connection's
		// own checks (pinService) report a listener that is not podman's.
		return false, nil
	}
	short := shortLimits(have, want)
	if len(short) == 0 {
		return false, nil
	}
	allows := allowsText(short)
	if b.Settings.Socket != "" {
		return false, limitErrorf("podman's service on krun.podman_socket %s (pid %d) allows %s, which the container is given and runc cannot raise; restart that service from a shell whose %s, or %s",
			p, pid, allows, raiseFix(short), lowerFix(short))
	}
	busy := limitErrorf("podman's service %s (pid %d), which devsandbox started for krun under lower limits, allows %s, which the container is given and runc cannot raise; other devsandbox sessions use that service, so it is not restarted under them: run again once they end (the service ends %v after its last session, and the next run starts one with its own limits), or %s",
		p, pid, allows, ServiceIdle, lowerFix(short))
	if b.users == nil {
		return false, busy
	}
	fd := int(b.users.Fd())
	// Only while no other devsandbox holds the users lock: the exclusive lock keeps
	// new ones out until the service is gone. A conversion that fails has dropped
	// the shared lock (flock(2)): it is taken again.
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
			return false, fmt.Errorf("taking the users lock of podman's service %s again: %w", p, err)
		}
		if !h.Listening(p) {
			return true, nil // its supervisor ended it meanwhile: the caller starts one
		}
		return false, busy
	}
	stopErr := h.StopService(p, pid)
	if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
		return false, fmt.Errorf("taking the users lock of podman's service %s again: %w", p, err)
	}
	if stopErr != nil {
		return false, limitErrorf("podman's service %s (pid %d) allows %s, and could not be restarted with this run's limits: %w; stop it (kill %d) and run again",
			p, pid, allows, stopErr, pid)
	}
	return true, nil
}

// allowsText is short for people: "512 open files (its hard RLIMIT_NOFILE), below
// this run's 20000, and 1000 processes (…)".
func allowsText(short []shortLimit) string {
	parts := make([]string, len(short))
	for i, s := range short {
		parts[i] = s.String()
	}
	return strings.Join(parts, ", and ")
}

// raiseFix says what the shell that starts a service needs: "`ulimit -Hn` is at
// least 20000".
func raiseFix(short []shortLimit) string {
	parts := make([]string, len(short))
	for i, s := range short {
		parts[i] = fmt.Sprintf("`ulimit -H%s` is at least %d", strings.TrimPrefix(rlimitInfos[s.Name].ulimit, "-"), s.Want)
	}
	return strings.Join(parts, " and ")
}

// lowerFix says how a run asks no more than the service has: the task limit by
// --pids (limits.pids, which the container's RLIMIT_NPROC is), the others by the
// run's own hard limit.
func lowerFix(short []shortLimit) string {
	var ulimits []string
	pids := ""
	for _, s := range short {
		if s.Name == "nproc" {
			pids = fmt.Sprintf(" with --pids %d (limits.pids)", s.Have)
			continue
		}
		ulimits = append(ulimits, fmt.Sprintf("ulimit -%s %d", strings.TrimPrefix(rlimitInfos[s.Name].ulimit, "-"), s.Have))
	}
	if len(ulimits) == 0 {
		return "run this one" + pids
	}
	return "run this one under `" + strings.Join(ulimits, "; ") + "`" + pids
}

// limitError is serviceFits' refusal: a service whose limits are below those the
// run's container is given.
type limitError struct{ err error }

func (e *limitError) Error() string { return e.err.Error() }
func (e *limitError) Unwrap() error { return e.err }

func limitErrorf(format string, a ...any) error {
	return &limitError{fmt.Errorf(format, a...)}
}

// serviceLog is where the service on sock logs (each service its own: see serviceKey).
func serviceLog(sock string) string { return sock + ".log" }

// openServiceLog makes the log of a service about to start, empty, for writing. It
// lies in podman's runtime directory, which a sandbox can write when the user binds
// the runtime directory (or a parent) read-write: what is at the name is removed
// (the name, never what a link there names or another name of a hard-linked file),
// and the log is made anew, exclusively, without following a link. The caller holds
// the service lock, so no other devsandbox makes it meanwhile; a name planted again
// in between makes the open fail.
func openServiceLog(path string) (*os.File, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("removing the old podman service log %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("making the podman service log %s: %w", path, err)
	}
	return f, nil
}

// podmanStartable returns the podman on PATH that StartService is to start podman's
// service with, and refuses one a sandbox could have planted (judgePodman): the
// service runs on the host, unsandboxed, and serves later runs of every project.
// The service is started from that path, not from a later lookup: a podman planted
// meanwhile in a PATH entry before it (the turn to use the service may be waited
// for) would be found then, unjudged. "" when PATH has none (StartService says
// podman is not installed).
func (b *Isolator) podmanStartable() (string, error) {
	podman, err := exec.LookPath("podman")
	if err != nil {
		return "", nil
	}
	if err := b.judgePodman(podman); err != nil {
		return "", err
	}
	return podman, nil
}

// judgePodman refuses podman at path where the sandbox of the run under way could
// write it (isolator.HostProgram against its plan), and, without a run (doctor, an
// image build, Check), where any sandbox of the user's writes
// (isolator.SandboxWritten: a devsandbox project, the sandbox homes, the sessions'
// /tmp).
func (b *Isolator) judgePodman(path string) error {
	if b.planned != nil {
		return isolator.HostProgram(b.planned, "podman", path)
	}
	data, state := isolator.HostRoots()
	return isolator.SandboxWritten(data, state, "podman", path)
}

// serviceEnv is environ with the PATH podman's service is started with
// (isolator.ChosenPathEnv): podman looks programs up there (conmon and the OCI
// runtime when containers.conf's paths hold none, newuidmap and newgidmap,
// slirp4netns or pasta for a container's network), and a PATH entry of the user's
// may be a directory a sandbox writes (a project's .venv/bin). podman's own
// directory comes first, so the supervisor finds the podman judged.
func serviceEnv(environ []string, podman string) []string {
	return isolator.ChosenPathEnv(environ, podman)
}
