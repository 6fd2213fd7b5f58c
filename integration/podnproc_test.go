//go:build integration

package integration

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestKrunServiceLowNproc: a krun run under a low task limit (prlimit
// --nproc=1000:1000) that finds no podman service starts one, which inherits that
// hard RLIMIT_NPROC. A krun run with the usual limits asks runc for a container
// RLIMIT_NPROC of limits.pids (4096), which that service cannot give:
//   - while the limited session still uses the service, the run stops with an error
//     that names the limit, both values, the service's pid and what to do, and the
//     service (and the session on it) is left alone; doctor's "podman service
//     limits" row says the same;
//   - once it ended, the run restarts the idle service with its own limits and runs.
//
// The containers' rlimits are all 16: the two the check compares and the service's
// own others (so podman adds none).
// Before, the run failed with runc's "error setting rlimit type 6: operation not
// permitted" (and so did every krun run after it until the service idled out).
func TestKrunServiceLowNproc(t *testing.T) {
	requirePodman(t)
	sock := suiteServiceSocket()
	noIdleService(t, sock)
	p := newProject(t)
	limited := command(t.Context(), p.dir, baseEnv(), "--isolator=krun", "--", "/bin/sh", "-c", hardNprocScript("ready")+"; read x")
	limited.Args = append([]string{"/usr/bin/prlimit", "--nproc=1000:1000", "--", it.bin}, limited.Args[1:]...)
	limited.Path = "/usr/bin/prlimit"
	lines, release := started(t, limited)
	lines.waitFor("ready 1000")
	services := podmanServices(sock)
	if len(services) == 0 {
		t.Fatalf("the limited session runs on no service on %s", sock)
	}
	stopLowServices(t, sock)
	// What podman gave the container: every rlimit, nofile and nproc the run's and
	// the others the service's own, nothing else to compare.
	ids := krunContainers(t, p, false)
	if len(ids) != 1 {
		t.Fatalf("want the limited session's container, have %v", ids)
	}
	var ulimits []struct{ Name string }
	out := mustPodman(t, "inspect", "--format", "{{json .HostConfig.Ulimits}}", ids[0])
	if err := json.Unmarshal([]byte(out), &ulimits); err != nil {
		t.Fatalf("podman inspect: %v: %s", err, out)
	}
	var names []string
	for _, u := range ulimits {
		names = append(names, u.Name)
	}
	slices.Sort(names)
	if once := slices.Compact(slices.Clone(names)); len(names) != 16 || len(once) != 16 || !slices.Contains(names, "RLIMIT_NOFILE") || !slices.Contains(names, "RLIMIT_NPROC") {
		t.Errorf("the container's rlimits are %v (%s), want all 16 once each: nofile and nproc, which the check compares, and the service's own", names, out)
	}

	r := run(t, p.dir, nil, "", "--isolator=krun", "--", "true")
	if r.code != 125 || strings.Contains(r.stderr, "rlimit type") ||
		!strings.Contains(r.stderr, "allows 1000 processes (its hard RLIMIT_NPROC), below this run's 4096") ||
		!strings.Contains(r.stderr, "(pid ") || !strings.Contains(r.stderr, "other devsandbox sessions use that service") ||
		!strings.Contains(r.stderr, "--pids 1000") || strings.Contains(r.stderr, "open files") {
		t.Errorf("the run while the limited session holds the service: want the error that names the task limit, not runc's:\n%s", r)
	}
	t.Logf("the run while the limited session holds the service:\n%s", r.stderr)
	d := run(t, p.dir, []string{"XDG_RUNTIME_DIR=" + runtimeDir()}, "", "doctor")
	if row := doctorRow(d.stdout, "podman service limits"); !strings.Contains(row, "allows 1000 processes") {
		t.Errorf("doctor's podman service limits row %q does not name the service's task limit:\n%s", row, d)
	}
	if now := podmanServices(sock); !slices.Equal(now, services) {
		t.Errorf("the service the limited session uses changed under it: %v, before %v", now, services)
	}
	release()
	if err := limited.Wait(); err != nil {
		t.Fatalf("the limited session (its service stopped under it?): %v", err)
	}
	// The service is idle (and lives on for ServiceIdle, 10 s): the next run restarts it.
	if len(podmanServices(sock)) == 0 {
		t.Fatalf("the limited session's service on %s ended before the next run: this test proves nothing", sock)
	}
	r = run(t, p.dir, nil, "", "--isolator=krun", "--", "/bin/sh", "-c", hardNprocScript("hard"))
	if r.code != 0 || strings.TrimSpace(r.stdout) != "hard 4096" {
		t.Fatalf("the run after the limited session ended (want limits.pids, 4096):\n%s", r)
	}
	for _, pid := range podmanServices(sock) {
		if slices.Contains(services, pid) {
			t.Errorf("the service started under nproc 1000 (%v) still runs (pid %d)", services, pid)
		}
	}
	// doctor now shows each limit it compares, of the new service.
	d = run(t, p.dir, []string{"XDG_RUNTIME_DIR=" + runtimeDir()}, "", "doctor")
	if row := doctorRow(d.stdout, "podman service limits"); !strings.Contains(row, "nofile ") || !strings.Contains(row, "nproc ") || !strings.Contains(row, "(a container is given 4096)") {
		t.Errorf("doctor's podman service limits row %q does not show each compared limit:\n%s", row, d)
	}
}

// TestKrunServiceLowLimitRace: two krun runs that meet a podman service below their
// task limit at the same moment both run: one restarts the service, the other waits
// for its turn and uses the new one. The test holds the service's turn (and its
// users lock, so that it does not idle out) until both runs have tried to take the
// turn (fanotify names each process that opens it), then lets them go at once.
// Before, each run held the users lock while it looked, took the other for a
// session that used the service, and both were refused.
func TestKrunServiceLowLimitRace(t *testing.T) {
	requirePodman(t)
	sock := suiteServiceSocket()
	noIdleService(t, sock)
	p := newProject(t)
	limited := command(t.Context(), p.dir, baseEnv(), "--isolator=krun", "--", "true")
	limited.Args = append([]string{"/usr/bin/prlimit", "--nproc=1000:1000", "--", it.bin}, limited.Args[1:]...)
	limited.Path = "/usr/bin/prlimit"
	if out, err := limited.CombinedOutput(); err != nil {
		t.Fatalf("the run under nproc 1000: %v\n%s", err, out)
	}
	services := podmanServices(sock)
	stopLowServices(t, sock)
	// The service lives on, idle, for ServiceIdle (10 s): a user's lock keeps it.
	users := holdLock(t, sock+".users", unix.LOCK_SH)
	if now := podmanServices(sock); len(now) == 0 || !slices.Equal(now, services) {
		t.Fatalf("the service under nproc 1000 (%v) is gone (%v): this test proves nothing", services, now)
	}
	turn := holdLock(t, sock+".turn", unix.LOCK_EX)
	opens := watchOpens(t, sock+".turn")

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	done := make(chan result, 2)
	for range 2 {
		go func() {
			cmd := command(ctx, p.dir, baseEnv(), "--isolator=krun", "--", "/bin/sh", "-c", hardNprocScript("hard"))
			var out, errb strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			r := result{out.String(), errb.String(), 0}
			if err != nil {
				r.code, r.stderr = -1, r.stderr+err.Error()
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					r.code = ee.ExitCode()
				}
			}
			done <- r
		}()
	}
	waiting := map[int32]bool{}
	deadline := time.After(60 * time.Second)
	for len(waiting) < 2 {
		select {
		case pid := <-opens:
			waiting[pid] = true
		case r := <-done:
			t.Fatalf("a run ended before both waited for the service's turn:\n%s", r)
		case <-deadline:
			t.Fatalf("the runs did not both come to the service's turn within 60s (came: %v)", waiting)
		}
	}
	users.Close()
	turn.Close()
	for range 2 {
		if r := <-done; r.code != 0 || strings.TrimSpace(r.stdout) != "hard 4096" {
			t.Errorf("a run that met the low service with another:\n%s", r)
		}
	}
	now := podmanServices(sock)
	for _, pid := range now {
		if slices.Contains(services, pid) {
			t.Errorf("the service started under nproc 1000 (%v) still runs (pid %d)", services, pid)
		}
	}
	if len(now) != 2 {
		t.Errorf("want one service (podman and its supervisor) after the runs, have %v", now)
	}
	t.Logf("the service under nproc 1000: %v; after the two runs: %v", services, now)
}

// hardNprocScript prints word and the hard RLIMIT_NPROC of the sandboxed shell (dash
// has no `ulimit -u`).
func hardNprocScript(word string) string {
	return `while read -r a b c d e; do [ "$a $b" = "Max processes" ] && echo "` + word + ` $d"; done </proc/self/limits; true`
}

// stopLowServices ends, when the test ends, the processes of the podman service on
// sock (podmanServices') whose hard open-file or task limit is below the test's own
// (which devsandbox runs inherit): a service started under a low limit that
// outlived the test. A later test must not meet it: the suite stays
// order-independent. It waits until they are gone.
func stopLowServices(t *testing.T, sock string) {
	t.Cleanup(func() {
		var nofile, nproc unix.Rlimit
		_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile)
		_ = unix.Getrlimit(unix.RLIMIT_NPROC, &nproc)
		low := func(pid int) bool {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
			if err != nil {
				return false
			}
			for _, l := range strings.Split(string(b), "\n") {
				own := nofile.Max
				rest, ok := strings.CutPrefix(l, "Max open files")
				if !ok {
					own = nproc.Max
					if rest, ok = strings.CutPrefix(l, "Max processes"); !ok {
						continue
					}
				}
				// The soft, then the hard limit.
				if f := strings.Fields(rest); len(f) >= 2 && f[1] != "unlimited" {
					if hard, err := strconv.ParseUint(f[1], 10, 64); err == nil && hard < own {
						return true
					}
				}
			}
			return false
		}
		var stopped []int
		for _, pid := range podmanServices(sock) {
			if low(pid) {
				stopped = append(stopped, pid)
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			left := slices.DeleteFunc(podmanServices(sock), func(pid int) bool { return !slices.Contains(stopped, pid) })
			if len(left) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("the service started under a low limit (%v) did not end within 20s", left)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		if len(stopped) > 0 {
			removeServiceFiles(t, sock)
		}
	})
}

// removeServiceFiles removes the files of the service on sock that was killed, as
// the next start's sweep would (the supervisor of a killed service removes only its
// socket): when no one holds its users lock and nothing listens.
func removeServiceFiles(t *testing.T, sock string) {
	t.Helper()
	f, err := os.OpenFile(sock+".users", os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Errorf("the users lock of the stopped service on %s is held: %v", sock, err)
		return
	}
	if c, err := net.Dial("unix", sock); err == nil {
		c.Close()
		return // a new service listens: the files are its
	}
	sum := sha256.Sum256([]byte(sock)) // its creations' lock (krun's createLockPath)
	create := filepath.Join(filepath.Dir(sock), "devsandbox-create-"+hex.EncodeToString(sum[:6])+".lock")
	for _, name := range []string{sock, sock + ".log", sock + ".turn", create, sock + ".users"} {
		if err := os.Remove(name); err != nil && !os.IsNotExist(err) {
			t.Errorf("removing %s: %v", name, err)
		}
	}
}

// holdLock takes the flock how on the existing lock file path (the test user's;
// the test, root, must not make it) without waiting; closing the file releases it.
func holdLock(t *testing.T, path string, how int) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB); err != nil {
		t.Fatalf("locking %s: %v", path, err)
	}
	return f
}

// watchOpens sends the pid of each process that opens path from now on (fanotify;
// the test runs as root), until the test ends.
func watchOpens(t *testing.T, path string) <-chan int32 {
	t.Helper()
	fd, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		t.Fatalf("fanotify: %v", err)
	}
	if err := unix.FanotifyMark(fd, unix.FAN_MARK_ADD, unix.FAN_OPEN, unix.AT_FDCWD, path); err != nil {
		unix.Close(fd)
		t.Fatalf("fanotify on %s: %v", path, err)
	}
	f := os.NewFile(uintptr(fd), "fanotify")
	t.Cleanup(func() { f.Close() })
	pids := make(chan int32, 1024)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			// struct fanotify_event_metadata: event_len u32, vers u8, reserved u8,
			// metadata_len u16, mask u64, fd s32, pid s32.
			for off := 0; off+24 <= n; {
				l := int(binary.NativeEndian.Uint32(buf[off:]))
				efd := int32(binary.NativeEndian.Uint32(buf[off+16:]))
				pid := int32(binary.NativeEndian.Uint32(buf[off+20:]))
				if efd >= 0 {
					unix.Close(int(efd))
				}
				select {
				case pids <- pid:
				default:
				}
				if l <= 0 {
					break
				}
				off += l
			}
		}
	}()
	return pids
}
