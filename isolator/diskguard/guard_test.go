package diskguard

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
)

// fakeStatfs answers from avail and fails on a path it was not told about.
func fakeStatfs(t *testing.T, avail map[string]uint64, errs map[string]error) Statfs {
	return func(p string) (uint64, error) {
		if err, ok := errs[p]; ok {
			return 0, err
		}
		n, ok := avail[p]
		if !ok {
			t.Errorf("statfs of unexpected path %s", p)
		}
		return n, nil
	}
}

func TestCheck(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		name    string
		reserve uint64
		avail   map[string]uint64
		errs    map[string]error
		low     string // the path a LowError names; "" none
		err     bool   // another error
	}{
		{"all above", gib, map[string]uint64{"/p": 2 * gib, "/s": gib}, nil, "", false},
		{"one under", gib, map[string]uint64{"/p": 2 * gib, "/s": gib - 1}, nil, "/s", false},
		{"missing skipped", gib, map[string]uint64{"/p": 2 * gib}, map[string]error{"/s": syscall.ENOENT}, "", false},
		{"unreadable", gib, map[string]uint64{"/p": 2 * gib}, map[string]error{"/s": syscall.EACCES}, "", true},
		{"no reserve reads nothing", 0, nil, nil, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := Guard{Reserve: c.reserve, Paths: []string{"/p", "/s"}, Statfs: fakeStatfs(t, c.avail, c.errs)}
			if c.reserve == 0 {
				g.Statfs = func(p string) (uint64, error) { t.Errorf("statfs of %s without a reserve", p); return 0, nil }
			}
			err := g.Check()
			var low *LowError
			switch {
			case c.low != "":
				if !errors.As(err, &low) || !errors.Is(err, ErrLow) || low.Path != c.low || low.Reserve != c.reserve {
					t.Errorf("Check = %v; want a LowError naming %s", err, c.low)
				}
			case c.err:
				if err == nil || errors.Is(err, ErrLow) || !errors.Is(err, syscall.EACCES) {
					t.Errorf("Check = %v; want the statfs error, wrapped", err)
				}
			case err != nil:
				t.Errorf("Check = %v; want nil", err)
			}
		})
	}
}

func TestLowErrorMessage(t *testing.T) {
	got := (&LowError{Path: "/home/u/proj", Avail: 300 << 20, Reserve: 1 << 30}).Error()
	want := `the file system holding /home/u/proj has 300.0 MiB available, under the 1.0 GiB sandbox.disk_reserve keeps for the rest of the host; free space there, or lower sandbox.disk_reserve in your config file ("0" turns the guard off)`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestWatch: the first tick at which a file system is under the reserve stops the
// run once, with the LowError; ticks before it stop nothing.
func TestWatch(t *testing.T) {
	avail := []uint64{5 << 20, 3 << 20, 1 << 20, 0}
	reads := 0
	g := Guard{Reserve: 2 << 20, Paths: []string{"/p"}, Statfs: func(string) (uint64, error) {
		n := avail[reads]
		reads++
		return n, nil
	}}
	tick := make(chan time.Time)
	stops := make(chan error, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Watch(context.Background(), tick, func(err error) { stops <- err })
	}()
	tick <- time.Time{}
	tick <- time.Time{}
	if len(stops) != 0 {
		t.Fatalf("stopped above the reserve: %v", <-stops)
	}
	tick <- time.Time{}
	<-done
	if err := <-stops; !errors.Is(err, ErrLow) || !errors.Is(err, isolator.ErrStopNow) {
		t.Errorf("stop(%v); want a LowError, of the class isolator.ErrStopNow", err)
	}
	if reads != 3 || len(stops) != 0 {
		t.Errorf("%d reads, %d more stops; want 3 reads and one stop", reads, len(stops))
	}
}

func TestWatchEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g := Guard{Reserve: 1, Paths: []string{"/p"}, Statfs: func(string) (uint64, error) { return 0, nil }}
	g.Watch(ctx, make(chan time.Time), func(err error) { t.Errorf("stop(%v) after the run", err) })
}

func TestPaths(t *testing.T) {
	p := &isolator.Plan{
		Project:     isolator.Project{Dir: "/home/u/proj"},
		SandboxHome: "/home/u/.local/state/devsandbox/proj-1/home",
		StateDir:    "/home/u/.local/state/devsandbox/proj-1",
		Tmp:         isolator.Tmp{Kind: "shm", Dir: "/dev/shm/devsandbox-1000"},
		Mounts: []isolator.Mount{
			{Kind: isolator.Bind, Source: "/data/rw", Dest: "/data/rw"},
			{Kind: isolator.Bind, Source: "/data/ro", Dest: "/data/ro", ReadOnly: true},
			{Kind: isolator.Bind, Source: "/home/u/proj", Dest: "/home/u/proj"},
			{Kind: isolator.MaskDir, Dest: "/home/u/.ssh"},
		},
	}
	want := []string{"/home/u/proj", "/home/u/.local/state/devsandbox/proj-1/home", "/home/u/.local/state/devsandbox/proj-1", "/dev/shm/devsandbox-1000", "/data/rw"}
	if got := Paths(p); !slices.Equal(got, want) {
		t.Errorf("Paths = %q\nwant %q", got, want)
	}
	p.Tmp = isolator.Tmp{Kind: "tmpfs", Dir: "/unused"}
	if got := Paths(p); slices.Contains(got, "/unused") {
		t.Errorf("a tmpfs /tmp's Dir is watched: %q", got)
	}
}

func TestHostStatfs(t *testing.T) {
	if _, err := HostStatfs(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if _, err := HostStatfs("/nonexistent/devsandbox"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("HostStatfs of a missing path: %v; want ErrNotExist", err)
	}
}

// BenchmarkHostCheck is the launch path's cost of the guard: one Check of four
// directories on the host (the run's project, home, state directory and a bind).
func BenchmarkHostCheck(b *testing.B) {
	d := b.TempDir()
	g := Guard{Reserve: 1, Paths: []string{d, d + "/..", "/", os.TempDir()}, Statfs: HostStatfs}
	for b.Loop() {
		if err := g.Check(); err != nil {
			b.Fatal(err)
		}
	}
}

// A file system without blocks (sysfs, procfs, cgroupfs: a user may bind /sys
// writable, and it reports 0 available) has nothing the reserve keeps: neither
// refused nor stopped for it (TestRootCgroupFilesystemReadOnly met the refusal
// before the check it is about).
func TestNoBlocksNotLow(t *testing.T) {
	if got := available(0, 0, 4096); got != NoBlocks {
		t.Errorf("available of a file system without blocks = %d, want NoBlocks", got)
	}
	if got := available(100, 3, 4096); got != 3*4096 {
		t.Errorf("available(100, 3, 4096) = %d", got)
	}
	if s := size(NoBlocks); !strings.Contains(s, "without blocks") {
		t.Errorf("size(NoBlocks) = %q", s)
	}
	g := Guard{Reserve: 1 << 30, Paths: []string{"/sys"}, Statfs: HostStatfs}
	if err := g.Check(); err != nil {
		t.Errorf("a guard of /sys: %v", err)
	}
}

// BenchmarkFor is the launch path's cost of making a run's guard with a reserve: the
// four directories of a default run (the project, the sandbox home, the state
// directory and the session /tmp in it) opened, and the file systems mounted below
// them found (none here: the host's table as it is), then released.
func BenchmarkFor(b *testing.B) {
	d := b.TempDir()
	p := &isolator.Plan{SandboxHome: d + "/home", StateDir: d + "/state"}
	p.Project.Dir = d + "/proj"
	p.Tmp.Dir = d + "/state/tmp/s"
	for _, dir := range []string{p.Project.Dir, p.SandboxHome, p.Tmp.Dir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	p.Limits.DiskReserve = 1
	for b.Loop() {
		_, release, err := For(p)
		if err != nil {
			b.Fatal(err)
		}
		release()
	}
}
