package sandboxinit

import (
	"net"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A process is a live session's when it descends from an exec'd process (parent pid
// 0); everything else but the keeper is a stray, whatever its depth.
func TestStrayPids(t *testing.T) {
	ps := []process{
		{1, 0},                      // the keeper
		{10, 0}, {11, 10}, {12, 11}, // a session's init, its command, a grandchild
		{20, 1}, {21, 20}, // an orphan of an ended session, and its child
		{30, 12}, // deep below a live session: the session's
		{40, 99}, // its parent started after the listing: looked up again
		{50, 98}, // its parent is gone
	}
	lookup := map[int]int{99: 10}
	got := strayPids(ps, 1, func(pid int) int {
		if pp, ok := lookup[pid]; ok {
			return pp
		}
		return -1
	})
	sort.Ints(got)
	if want := []int{20, 21, 50}; !reflect.DeepEqual(got, want) {
		t.Fatalf("strays %v, want %v", got, want)
	}
}

// The parent pid follows the command's name, which may hold spaces and parentheses;
// a line cut short or without a name has none.
func TestStatPPid(t *testing.T) {
	for _, c := range []struct {
		line string
		want int
	}{
		{"42 (sh) S 7 42 42 0 -1 4194560 97 0 0 0", 7},
		{"43 (a) b) (c) R 1 43 1 0", 1},
		{"44 (x y) Z 0", 0},
		{"45 (sleep) S", -1},
		{"46 (sleep S 3", -1},
		{"47 (x) S 3x", -1},
		{"", -1},
	} {
		if got := statPPid([]byte(c.line)); got != c.want {
			t.Errorf("statPPid(%q) = %d, want %d", c.line, got, c.want)
		}
	}
}

// processes lists every process of the pid namespace with its parent, as its stat
// file gives them: this test process and a child of its own are among them.
func TestProcessesListsChildren(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("starting sleep: %v", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	parents := map[int]int{}
	for _, p := range processes() {
		parents[p.pid] = p.ppid
	}
	if pp, ok := parents[os.Getpid()]; !ok || pp != os.Getppid() {
		t.Errorf("this process: parent %d (listed %v), want %d", pp, ok, os.Getppid())
	}
	if pp, ok := parents[cmd.Process.Pid]; !ok || pp != os.Getpid() {
		t.Errorf("the child: parent %d (listed %v), want %d", pp, ok, os.Getpid())
	}
	if got, want := parentPid(cmd.Process.Pid), os.Getpid(); got != want {
		t.Errorf("parentPid(child) = %d, want %d", got, want)
	}
	if got := parentPid(1 << 30); got != -1 {
		t.Errorf("parentPid of no process = %d, want -1", got)
	}
}

// The first session of a kept container can be exec'd before the keeper listens: its
// init dials again while nothing listens (ECONNREFUSED), and only then; it gives up
// once the limit has passed.
func TestDialKeeper(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	server, client := net.Pipe()
	defer server.Close()
	calls := 0
	c, err := dialKeeper(func(time.Duration) (net.Conn, error) {
		if calls++; calls < 4 {
			return nil, refused
		}
		return client, nil
	}, time.Minute)
	if err != nil || c != client || calls != 4 {
		t.Fatalf("dialKeeper: %v, %v after %d calls; want the connection after 4", c, err, calls)
	}

	other := &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.EACCES)}
	calls = 0
	if _, err := dialKeeper(func(time.Duration) (net.Conn, error) { calls++; return nil, other }, time.Minute); err != other || calls != 1 {
		t.Fatalf("another error: %v after %d calls; want it at once", err, calls)
	}

	calls = 0
	if _, err := dialKeeper(func(time.Duration) (net.Conn, error) { calls++; return nil, refused }, 0); err != refused || calls != 1 {
		t.Fatalf("no time left: %v after %d calls; want the refusal at once", err, calls)
	}
}

// A session's init refuses a socket whose listener is not pid 1 (the keeper), here
// the test process listening on a name of its own: it would answer without sweeping.
func TestRegisterRefusesAnotherListener(t *testing.T) {
	if os.Getpid() == 1 {
		t.Skip("the test runs as pid 1")
	}
	ln, err := net.Listen("unix", "@devsandbox-keeper-test-"+strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte{'k'})
			c.Close()
		}
	}()
	c, err := register(ln.Addr().String(), "", "", -1)
	if err == nil {
		c.Close()
		t.Fatal("register accepted a listener that is not pid 1")
	}
	if want := "something other than the kept container's keeper answers on its socket (pid " + strconv.Itoa(os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Fatalf("register: %v; want %q", err, want)
	}
}

// emptyDir empties the directory and follows no link planted in it.
func TestEmptyDir(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(outside+"/keep", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeSecretFiles(dir, map[string][]byte{"TOKEN": []byte("v")}); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir+"/link"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir+"/d/e", 0o700); err != nil {
		t.Fatal(err)
	}
	emptyDir(dir)
	if names, err := readNames(dir); err != nil || len(names) != 0 {
		t.Fatalf("left %v (%v)", names, err)
	}
	if _, err := os.Stat(outside + "/keep"); err != nil {
		t.Fatalf("a link's target was removed: %v", err)
	}
	emptyDir("") // no secret directory: nothing to do
}
