package krun

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator/krun/helper"
)

const procLimits = `Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            unlimited            seconds   
Max processes             96555                96555                processes 
Max open files            1024                 512                  files     
Max locked memory         8388608              8388608              bytes     
`

func TestHardNofile(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{procLimits, 512, true},
		{strings.Replace(procLimits, "512 ", "unlimited ", 1), 0, true},
		{"Limit Soft Limit Hard Limit Units\n", 0, false},
		{"Max open files            1024\n", 0, false},
	} {
		got, err := hardNofile(c.in)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("hardNofile(%q) = %d, %v; want %d, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestNofileShort(t *testing.T) {
	for _, c := range []struct {
		have, want uint64
		short      bool
	}{
		{512, 20000, true},
		{20000, 512, false},
		{20000, 20000, false},
		{0, 20000, false}, // an unlimited service
		{512, 0, false},   // an unlimited run: the spec sets no open-file limit
	} {
		if got := nofileShort(c.have, c.want); got != c.short {
			t.Errorf("nofileShort(%d, %d) = %v", c.have, c.want, got)
		}
	}
}

// limitHost is fakeHost with a service on the socket whose hard open-file limit is
// have, and a record of StopService.
type limitHost struct {
	fakeHost
	have    uint64
	stopped *int
	stopErr error
}

func (h limitHost) ServiceLimit(string) (int, uint64, error) { return 4242, h.have, nil }
func (h limitHost) StopService(_ string, pid int) error {
	if pid != 4242 {
		h.t.Errorf("StopService(%d), want the listener's pid 4242", pid)
	}
	*h.stopped++
	return h.stopErr
}

// startedHost is limitHost whose StartService succeeds.
type startedHost struct{ limitHost }

func (startedHost) StartService(context.Context, string, string) error { return nil }

// A service whose hard open-file limit is below the run's (fakeHost's 4096): when no
// other devsandbox holds its users lock it is stopped and a new one started, and the
// run's shared lock is held again after; while another holds it, the run stops with
// an error that names the socket, the pid, both limits and what to do, and the
// service is not stopped; a krun.podman_socket's is never stopped; one at or above
// the run's limit is used as it is.
func TestSocketServiceLimit(t *testing.T) {
	newB := func(t *testing.T) *Isolator {
		return &Isolator{Settings: helper.Settings{Runtime: "runc", RuntimeDir: t.TempDir()}}
	}
	t.Run("idle: restarted", func(t *testing.T) {
		b := newB(t)
		stopped := 0
		h := startedHost{limitHost{fakeHost: fakeHost{t: t}, have: 512, stopped: &stopped}}
		sock, err := b.socket(context.Background(), h)
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
		b := newB(t)
		other, err := holdUsers(context.Background(), b.socketName(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		stopped := 0
		_, err = b.socket(context.Background(), limitHost{fakeHost: fakeHost{t: t}, have: 512, stopped: &stopped})
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
	t.Run("stop fails", func(t *testing.T) {
		b := newB(t)
		stopped := 0
		_, err := b.socket(context.Background(), limitHost{fakeHost: fakeHost{t: t}, have: 512, stopped: &stopped, stopErr: errors.New("not ours")})
		if err == nil || !strings.Contains(err.Error(), "not ours") || !strings.Contains(err.Error(), "kill 4242") {
			t.Errorf("socket: %v", err)
		}
	})
	t.Run("configured socket", func(t *testing.T) {
		b := newB(t)
		b.Settings.Socket = "/run/user/1000/podman/podman.sock"
		stopped := 0
		_, err := b.socket(context.Background(), limitHost{fakeHost: fakeHost{t: t}, have: 512, stopped: &stopped})
		if err == nil || stopped != 0 || !strings.Contains(err.Error(), "krun.podman_socket "+b.Settings.Socket+" (pid 4242) allows 512 open files") {
			t.Errorf("socket: %v (stopped %d times)", err, stopped)
		}
	})
	t.Run("enough", func(t *testing.T) {
		for _, have := range []uint64{4096, 20000, 0} {
			b := newB(t)
			stopped := 0
			if _, err := b.socket(context.Background(), limitHost{fakeHost: fakeHost{t: t}, have: have, stopped: &stopped}); err != nil || stopped != 0 {
				t.Errorf("have %d: socket %v, stopped %d times", have, err, stopped)
			}
		}
	})
}
