package krun

import (
	"context"
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	spec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator/krun/helper"
)

const procLimits = `Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            unlimited            seconds   
Max processes             96555                96555                processes 
Max open files            1024                 512                  files     
Max locked memory         8388608              8388608              bytes     
`

func TestHardLimits(t *testing.T) {
	for _, c := range []struct {
		in   string
		want map[string]uint64
		ok   bool
	}{
		{procLimits, map[string]uint64{"cpu": 0, "nproc": 96555, "nofile": 512, "memlock": 8388608}, true},
		{strings.Replace(procLimits, "512 ", "unlimited ", 1), map[string]uint64{"cpu": 0, "nproc": 96555, "nofile": 0, "memlock": 8388608}, true},
		{"Limit Soft Limit Hard Limit Units\n", nil, false},
		{"Max open files            1024\n", nil, false},
		{"Max open files            1024                 many                 files\n", nil, false},
	} {
		got, err := hardLimits(c.in)
		if !maps.Equal(got, c.want) || (err == nil) != c.ok {
			t.Errorf("hardLimits(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
	// This kernel's own table: every row is known.
	b, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		t.Skip(err)
	}
	have, err := hardLimits(string(b))
	if err != nil || len(have) != len(rlimitInfos) {
		t.Errorf("hardLimits(/proc/self/limits) = %v, %v; want all %d rows", have, err, len(rlimitInfos))
	}
}

// ownLimits reads soft and hard of every row, unlimited as RLIM_INFINITY, and
// agrees with getrlimit on this kernel's own table.
func TestOwnLimits(t *testing.T) {
	got, err := ownLimits(procLimits)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]spec.POSIXRlimit{}
	for _, l := range got {
		byName[l.Type] = l
	}
	if l := byName["nofile"]; l.Soft != 1024 || l.Hard != 512 {
		t.Errorf("nofile %+v, want 1024:512", l)
	}
	if l := byName["cpu"]; l.Soft != unlimited || l.Hard != unlimited {
		t.Errorf("cpu %+v, want unlimited", l)
	}
	b, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		t.Skip(err)
	}
	own, err := ownLimits(string(b))
	if err != nil || len(own) != len(rlimitInfos) {
		t.Fatalf("ownLimits(/proc/self/limits) = %v, %v; want all %d rows", own, err, len(rlimitInfos))
	}
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r); err != nil {
		t.Fatal(err)
	}
	for _, l := range own {
		if l.Type == "memlock" && (l.Soft != r.Cur || l.Hard != r.Max) {
			t.Errorf("memlock %+v, getrlimit %d:%d", l, r.Cur, r.Max)
		}
	}
}

// With the service's own limits (Inherited) the spec sets every rlimit: nofile and
// nproc its own, every other the service's, so podman has none to add from a
// containers.conf's default_ulimits, and none the service cannot grant.
func TestRlimitsInherited(t *testing.T) {
	b, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		t.Skip(err)
	}
	own, err := ownLimits(string(b))
	if err != nil {
		t.Fatal(err)
	}
	o := Options{NofileHard: 20000, NprocHard: 0, Inherited: own}
	r := rlimits(o, 4096)
	if len(r) != len(rlimitInfos) {
		t.Fatalf("the spec sets %d rlimits, want every one (%d): %v", len(r), len(rlimitInfos), r)
	}
	seen := map[string]bool{}
	for _, l := range r {
		name := rlimitName(l.Type)
		if seen[name] {
			t.Errorf("%s set twice: %v", name, r)
		}
		seen[name] = true
		switch name {
		case "nofile":
			if l.Hard != 20000 || l.Soft != 20000 {
				t.Errorf("nofile %+v, want the run's 20000", l)
			}
		case "nproc":
			if l.Hard != 4096 || l.Soft != 4096 {
				t.Errorf("nproc %+v, want limits.pids 4096", l)
			}
		default:
			if !slices.Contains(own, l) {
				t.Errorf("%+v is not the service's own (%v)", l, own)
			}
		}
	}
	// What the check compares is unchanged: the service's own are never short.
	have, _ := hardLimits(string(b))
	for _, s := range shortLimits(have, r) {
		if s.Name != "nofile" && s.Name != "nproc" {
			t.Errorf("an inherited limit is short: %v", s)
		}
	}
}

func TestShortLimits(t *testing.T) {
	want := []spec.POSIXRlimit{{Type: "nofile", Hard: 20000, Soft: 20000}, {Type: "RLIMIT_NPROC", Hard: 4096, Soft: 4096}}
	for _, c := range []struct {
		have  map[string]uint64
		short []shortLimit
	}{
		{map[string]uint64{"nofile": 512, "nproc": 96555}, []shortLimit{{"nofile", 512, 20000}}},
		{map[string]uint64{"nofile": 20000, "nproc": 1000}, []shortLimit{{"nproc", 1000, 4096}}},
		{map[string]uint64{"nofile": 512, "nproc": 1000}, []shortLimit{{"nofile", 512, 20000}, {"nproc", 1000, 4096}}},
		{map[string]uint64{"nofile": 20000, "nproc": 4096}, nil},
		{map[string]uint64{"nofile": 0, "nproc": 0}, nil}, // an unlimited service
		{map[string]uint64{"nofile": 20000}, nil},         // a limit /proc did not show
	} {
		if got := shortLimits(c.have, want); !slices.Equal(got, c.short) {
			t.Errorf("shortLimits(%v) = %v, want %v", c.have, got, c.short)
		}
	}
	// An unlimited run: the spec sets no open-file limit.
	if got := shortLimits(map[string]uint64{"nofile": 512}, nil); got != nil {
		t.Errorf("shortLimits with nothing asked = %v", got)
	}
}

// What the check compares is what the spec asks: the rendered spec's rlimits are
// wantedLimits' for the Plan's limits.pids and the host's hard limits, and each is
// one the check can read from /proc.
func TestWantedLimitsAreTheSpecs(t *testing.T) {
	for _, c := range []struct {
		pids           int
		nofile, nprocH uint64
	}{
		{4096, 20000, 96555}, {4096, 20000, 1000}, {100, 0, 0}, {0, 20000, 0}, {0, 0, 0},
	} {
		p := basePlan()
		p.Limits.Pids = c.pids
		o := opts
		o.NofileHard, o.NprocHard = c.nofile, c.nprocH
		s, err := specGen(p, o)
		if err != nil {
			t.Fatal(err)
		}
		want := wantedLimits(o, c.pids)
		if !slices.Equal(s.Gen.Rlimits, want) {
			t.Errorf("pids %d, hard nofile %d, nproc %d: the spec asks %v, the check compares %v", c.pids, c.nofile, c.nprocH, s.Gen.Rlimits, want)
		}
		for _, r := range s.Gen.Rlimits {
			if _, ok := rlimitInfos[rlimitName(r.Type)]; !ok {
				t.Errorf("the spec asks %q, which the check cannot read", r.Type)
			}
		}
	}
}

// limitHost is fakeHost with a service on the socket whose hard open-file limit is
// have and task limit nproc (0: unlimited), and a record of StopService.
type limitHost struct {
	fakeHost
	have    uint64 // nofile
	nproc   uint64
	stopped *int
	stopErr error
}

func (h limitHost) ServiceLimits(string) (int, map[string]uint64, error) {
	return 4242, map[string]uint64{"nofile": h.have, "nproc": h.nproc}, nil
}
func (h limitHost) StopService(_ string, pid int) error {
	if pid != 4242 {
		h.t.Errorf("StopService(%d), want the listener's pid 4242", pid)
	}
	*h.stopped++
	return h.stopErr
}

// startedHost is limitHost whose StartService succeeds.
type startedHost struct{ limitHost }

func (startedHost) StartService(context.Context, string, string, string) error { return nil }

// A service whose hard open-file or task limit is below what the run's container
// asks (want: nofile 4096, nproc 2048): when no other devsandbox holds its users lock
// it is stopped and a new one started, and the run's shared lock is held again
// after; while another holds it, the run stops with an error that names the socket,
// the pid, each short limit with both values, and what to do, and the service is not
// stopped; a krun.podman_socket's is never stopped; one at or above the run's limits
// is used as it is.
func TestSocketServiceLimit(t *testing.T) {
	newB := func(t *testing.T) *Isolator {
		return &Isolator{Settings: helper.Settings{Runtime: "runc", RuntimeDir: t.TempDir()}}
	}
	// busyB is newB's isolator with another session holding its service (the users
	// lock shared) until the test ends.
	busyB := func(t *testing.T) *Isolator {
		b := newB(t)
		other, err := holdUsers(context.Background(), b.socketName(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { other.Close() })
		return b
	}
	want := []spec.POSIXRlimit{{Type: "nofile", Hard: 4096, Soft: 4096}, {Type: "nproc", Hard: 2048, Soft: 2048}}
	t.Run("idle: restarted", func(t *testing.T) {
		b := newB(t)
		stopped := 0
		h := startedHost{limitHost{fakeHost: fakeHost{t: t}, have: 512, stopped: &stopped}}
		sock, err := b.socket(context.Background(), h, want)
		if err != nil || sock != b.socketName() || stopped != 1 {
			t.Fatalf("socket = %q, %v; stopped %d times, want once", sock, err, stopped)
		}
		// The run holds the service shared again: an exclusive lock cannot be had.
		f, err := os.OpenFile(usersFile(sock), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
			t.Errorf("after the restart the run does not hold the users lock: flock %v", err)
		}
	})
	t.Run("busy: refused", func(t *testing.T) {
		b := busyB(t)
		stopped := 0
		_, err := b.socket(context.Background(), limitHost{fakeHost: fakeHost{t: t}, have: 512, stopped: &stopped}, want)
		var le *limitError
		if !errors.As(err, &le) || stopped != 0 {
			t.Fatalf("socket: %v (stopped %d times), want the limit's error and no stop", err, stopped)
		}
		for _, w := range []string{b.socketName(), "pid 4242", "allows 512 open files", "below this run's 4096", "other devsandbox sessions use that service", "ulimit -n 512"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("the error lacks %q: %v", w, err)
			}
		}
		// The run still holds its shared lock (the failed conversion dropped it).
		if err := unix.Flock(int(b.users.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
			t.Errorf("the run's users lock: %v", err)
		}
	})
	t.Run("nproc idle: restarted", func(t *testing.T) {
		b := newB(t)
		stopped := 0
		h := startedHost{limitHost{fakeHost: fakeHost{t: t}, have: 20000, nproc: 1000, stopped: &stopped}}
		if _, err := b.socket(context.Background(), h, want); err != nil || stopped != 1 {
			t.Fatalf("socket: %v; stopped %d times, want once", err, stopped)
		}
	})
	t.Run("nproc busy: refused", func(t *testing.T) {
		b := busyB(t)
		stopped := 0
		_, err := b.socket(context.Background(), limitHost{fakeHost: fakeHost{t: t}, have: 20000, nproc: 1000, stopped: &stopped}, want)
		var le *limitError
		if !errors.As(err, &le) || stopped != 0 {
			t.Fatalf("socket: %v (stopped %d times), want the limit's error and no stop", err, stopped)
		}
		for _, w := range []string{b.socketName(), "pid 4242", "allows 1000 processes (its hard RLIMIT_NPROC), below this run's 2048", "other devsandbox sessions use that service", "run this one with --pids 1000 (limits.pids)"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("the error lacks %q: %v", w, err)
			}
		}
		if strings.Contains(err.Error(), "open files") {
			t.Errorf("the error names the open-file limit, which is enough: %v", err)
		}
	})
	t.Run("both busy: refused", func(t *testing.T) {
		b := busyB(t)
		stopped := 0
		_, err := b.socket(context.Background(), limitHost{fakeHost: fakeHost{t: t}, have: 512, nproc: 1000, stopped: &stopped}, want)
		if w := "allows 512 open files (its hard RLIMIT_NOFILE), below this run's 4096, and 1000 processes (its hard RLIMIT_NPROC), below this run's 2048"; err == nil || !strings.Contains(err.Error(), w) ||
			!strings.Contains(err.Error(), "run this one under `ulimit -n 512` with --pids 1000 (limits.pids)") {
			t.Errorf("socket: %v, want %q and both fixes", err, w)
		}
	})
	t.Run("stop fails", func(t *testing.T) {
		b := newB(t)
		stopped := 0
		_, err := b.socket(context.Background(), limitHost{fakeHost: fakeHost{t: t}, have: 512, stopped: &stopped, stopErr: errors.New("not ours")}, want)
		if err == nil || !strings.Contains(err.Error(), "not ours") || !strings.Contains(err.Error(), "kill 4242") {
			t.Errorf("socket: %v", err)
		}
	})
	t.Run("configured socket", func(t *testing.T) {
		b := newB(t)
		b.Settings.Socket = "/run/user/1000/podman/podman.sock"
		stopped := 0
		_, err := b.socket(context.Background(), limitHost{fakeHost: fakeHost{t: t}, have: 512, stopped: &stopped}, want)
		if err == nil || stopped != 0 || !strings.Contains(err.Error(), "krun.podman_socket "+b.Settings.Socket+" (pid 4242) allows 512 open files") {
			t.Errorf("socket: %v (stopped %d times)", err, stopped)
		}
		_, err = b.socket(context.Background(), limitHost{fakeHost: fakeHost{t: t}, have: 20000, nproc: 1000, stopped: &stopped}, want)
		if err == nil || stopped != 0 || !strings.Contains(err.Error(), "(pid 4242) allows 1000 processes") || !strings.Contains(err.Error(), "`ulimit -Hu` is at least 2048") {
			t.Errorf("socket: %v (stopped %d times)", err, stopped)
		}
	})
	t.Run("enough", func(t *testing.T) {
		for _, have := range []uint64{4096, 20000, 0} {
			b := newB(t)
			stopped := 0
			if _, err := b.socket(context.Background(), limitHost{fakeHost: fakeHost{t: t}, have: have, nproc: have / 2, stopped: &stopped}, want); err != nil || stopped != 0 {
				t.Errorf("have %d: socket %v, stopped %d times", have, err, stopped)
			}
		}
		// A run whose container asks nothing (prune) uses any service.
		b := newB(t)
		stopped := 0
		if _, err := b.socket(context.Background(), limitHost{fakeHost: fakeHost{t: t}, have: 512, nproc: 1000, stopped: &stopped}, nil); err != nil || stopped != 0 {
			t.Errorf("nothing asked: socket %v, stopped %d times", err, stopped)
		}
	})
}

// raceHost is one podman service that two runs share: the old one (pid 4242) below
// their limits until a run stops it, then none until a run starts the new one (pid
// 5000). The old service's ServiceLimits holds each run until both runs have come
// to the service: looked at its limits, or waited for the turn to (arrive).
type raceHost struct {
	fakeHost
	mu            sync.Mutex
	pid           int
	stops, starts int
	arrivals      int
	both          chan struct{}
}

func (h *raceHost) arrive() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.arrivals++; h.arrivals == 2 {
		close(h.both)
	}
}

func (h *raceHost) Listening(string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pid != 0
}

func (h *raceHost) ServiceLimits(string) (int, map[string]uint64, error) {
	h.mu.Lock()
	pid := h.pid
	h.mu.Unlock()
	if pid != 4242 {
		return pid, map[string]uint64{"nofile": 20000, "nproc": 96555}, nil
	}
	h.arrive()
	select {
	case <-h.both:
	case <-time.After(20 * time.Second): // a bound on a broken test, not a synchronisation
		h.t.Error("the other run never came to the service")
	}
	return pid, map[string]uint64{"nofile": 512, "nproc": 1000}, nil
}

func (h *raceHost) StopService(_ string, pid int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if pid != 4242 || h.pid != 4242 {
		h.t.Errorf("StopService(%d) of service %d", pid, h.pid)
	}
	h.stops++
	h.pid = 0
	return nil
}

func (h *raceHost) StartService(context.Context, string, string, string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.starts++
	h.pid = 5000
	return nil
}

// Two runs that meet a service below their limits at the same moment: exactly one
// restarts it, and the other waits for its turn and uses the new service; neither
// is refused. (Both held the users lock while they looked, and each took the other
// for a session that used the service: both were refused.)
func TestSocketServiceLimitRace(t *testing.T) {
	dir := t.TempDir()
	h := &raceHost{fakeHost: fakeHost{t: t}, pid: 4242, both: make(chan struct{})}
	want := []spec.POSIXRlimit{{Type: "nofile", Hard: 20000, Soft: 20000}, {Type: "nproc", Hard: 4096, Soft: 4096}}
	errs := make(chan error, 2)
	for range 2 {
		b := &Isolator{Settings: helper.Settings{Runtime: "runc", RuntimeDir: dir}, turnWaiting: h.arrive}
		t.Cleanup(func() {
			if b.users != nil {
				b.users.Close()
			}
		})
		go func() {
			_, err := b.socket(context.Background(), h, want)
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("socket: %v", err)
		}
	}
	if h.stops != 1 || h.starts != 1 || h.pid != 5000 {
		t.Errorf("stopped %d and started %d times (service %d), want once each", h.stops, h.starts, h.pid)
	}
}
