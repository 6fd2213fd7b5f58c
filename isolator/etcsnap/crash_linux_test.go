package etcsnap

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// killEnv makes TestBuildKilledHelper, run as a child of TestBuildKilled, build a
// snapshot and kill itself (SIGKILL: no deferred cleanup, as kill -9 of devsandbox)
// at a step of the build.
const killEnv = "ETCSNAP_TEST_KILL_AT"

type killOrder struct {
	Root    string
	Entries []Entry
	Step    string
	N       int // for "write": after the n-th file or directory
}

// TestBuildKilledHelper is the child of TestBuildKilled; it does nothing otherwise.
func TestBuildKilledHelper(t *testing.T) {
	raw := os.Getenv(killEnv)
	if raw == "" {
		return // run by TestBuildKilled only
	}
	var o killOrder
	if err := json.Unmarshal([]byte(raw), &o); err != nil {
		t.Fatal(err)
	}
	buildHook = func(step string, n int) error {
		if step == o.Step && (step != "write" || n == o.N) {
			_ = unix.Kill(os.Getpid(), unix.SIGKILL)
			select {} // the signal is on its way
		}
		return nil
	}
	_, err := Open(o.Root, o.Entries, later())
	t.Fatalf("the build was not killed at %s %d: %v", o.Step, o.N, err)
}

// A build killed at any step (after the first file, in the middle, before the copy is
// synced, before and after its rename) leaves the snapshot that was there intact and
// no half-built one that a later launch uses: the next launch either rebuilds the
// snapshot of the host as it is, or (killed after the rename) reuses a complete one.
func TestBuildKilled(t *testing.T) {
	for _, tc := range []struct {
		step   string
		n      int
		reused bool // the next launch finds the snapshot complete
	}{
		{step: "write", n: 1},
		{step: "write", n: 6},
		{step: "sync"},
		{step: "rename"},
		{step: "renamed", reused: true},
	} {
		t.Run(fmt.Sprintf("%s-%d", tc.step, tc.n), func(t *testing.T) {
			src := hostTree(t)
			es := treeEntries(t, src)
			root := filepath.Join(t.TempDir(), "etc")
			t.Cleanup(func() { removeRoot(root) })
			old := open(t, root, es)
			oldView := listing(t, old.Path)
			old.Close()

			// The host changes (an update of the CA certificates): the next launch builds.
			write(t, filepath.Join(src, "certs/ca-certificates"), "-----BEGIN CERTIFICATE-----\nnew\n")
			key, err := Key(es, later())
			if err != nil || key == old.Key {
				t.Fatalf("the change gives no new key: %v", err)
			}
			order, _ := json.Marshal(killOrder{Root: root, Entries: es, Step: tc.step, N: tc.n})
			cmd := exec.Command(os.Args[0], "-test.run=^TestBuildKilledHelper$", "-test.count=1")
			cmd.Env = append(os.Environ(), killEnv+"="+string(order))
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("the build was not killed: %v\n%s", err, out)
			}

			// What the kill left: the old snapshot as it was, and the new key's name only
			// if the rename was done.
			if got := listing(t, old.Path); !reflect.DeepEqual(got, oldView) {
				t.Errorf("the snapshot in use changed:\n%q\nwas:\n%q", got, oldView)
			}
			tmps := 0
			for _, n := range names(t, root) {
				switch {
				case strings.HasPrefix(n, tmpPrefix):
					tmps++
				case n == key && !tc.reused:
					t.Errorf("a build killed at %s left its snapshot under its key", tc.step)
				}
			}
			if tmps == 0 && !tc.reused {
				t.Errorf("the killed build left no temporary directory: was it killed at %s?", tc.step)
			}

			s := open(t, root, es)
			if s.Key != key || s.Built == tc.reused {
				t.Fatalf("after a build killed at %s: key %s (want %s), built %v", tc.step, s.Key, key, s.Built)
			}
			if got, want := listing(t, filepath.Join(s.Path, "ssl")), listing(t, src); !reflect.DeepEqual(got, want) {
				t.Errorf("the snapshot after a build killed at %s:\n%q\nthe host's:\n%q", tc.step, got, want)
			}
			if got := read(t, filepath.Join(s.Path, "passwd")); got != "u:x:1000\n" {
				t.Errorf("passwd in the snapshot: %q", got)
			}
		})
	}
}

// Every file and directory of a snapshot is fsynced before it is renamed into place
// (the rename is what makes a launch use it), and what the build keeps open until
// then is closed on exec (never inherited by bwrap, pasta or the sandbox).
func TestBuildSyncedBeforeRename(t *testing.T) {
	src := hostTree(t)
	es := treeEntries(t, src)
	root := filepath.Join(t.TempDir(), "etc")
	t.Cleanup(func() { removeRoot(root) })
	var written, synced, tree int
	var leaked []string
	buildHook = func(step string, n int) error {
		switch step {
		case "write":
			written = n
		case "sync":
			leaked = append(leaked, inheritable(t, root)...)
		case "rename":
			synced = n
			tree = countTmp(t, root)
		}
		return nil
	}
	t.Cleanup(func() { buildHook = nil })
	s := open(t, root, es)
	if !s.Built {
		t.Fatal("not built")
	}
	if written == 0 || synced != tree {
		t.Errorf("%d of the %d files and directories were fsynced before the rename (%d written)", synced, tree, written)
	}
	if len(leaked) > 0 {
		t.Errorf("descriptors of the snapshot being built are inherited across exec: %q", leaked)
	}
	s.Close() // its own descriptor, the lock
	if open := descriptorsUnder(t, root); len(open) > 0 {
		t.Errorf("the build left descriptors of the snapshot open: %q", open)
	}
}

// A build that fails at a file (a full disk, say) removes what it wrote, keeps no
// descriptor open, and the next launch builds the snapshot whole.
func TestBuildFailsAtFile(t *testing.T) {
	src := hostTree(t)
	es := treeEntries(t, src)
	root := filepath.Join(t.TempDir(), "etc")
	t.Cleanup(func() { removeRoot(root) })
	errFull := errors.New("no space left on the test's device")
	buildHook = func(step string, n int) error {
		if step == "write" && n == 4 {
			return errFull
		}
		return nil
	}
	t.Cleanup(func() { buildHook = nil })
	if _, err := Open(root, es, later()); !errors.Is(err, errFull) {
		t.Fatalf("Open: %v, want the write's error", err)
	}
	if n := names(t, root); len(n) != 0 {
		t.Errorf("a failed build left %q", n)
	}
	if open := descriptorsUnder(t, root); len(open) > 0 {
		t.Errorf("a failed build left descriptors open: %q", open)
	}
	buildHook = nil
	s := open(t, root, es)
	if !s.Built {
		t.Fatal("not built after the failure")
	}
	if got, want := listing(t, filepath.Join(s.Path, "ssl")), listing(t, src); !reflect.DeepEqual(got, want) {
		t.Errorf("the snapshot:\n%q\nthe host's:\n%q", got, want)
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// countTmp counts the files and directories (not links, not the top) of the build
// in progress under root.
func countTmp(t *testing.T, root string) int {
	t.Helper()
	n := 0
	for _, name := range names(t, root) {
		if !strings.HasPrefix(name, tmpPrefix) {
			continue
		}
		top := filepath.Join(root, name)
		if err := filepath.Walk(top, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			if p != top && (fi.Mode().IsRegular() || fi.IsDir()) {
				n++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// descriptorsUnder lists this process's descriptors of files under root.
func descriptorsUnder(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for fd, target := range descriptors(t) {
		if strings.HasPrefix(target, root+"/") {
			out = append(out, strconv.Itoa(fd)+" "+target)
		}
	}
	return out
}

// inheritable lists the descriptors of files under root without close-on-exec.
func inheritable(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for fd, target := range descriptors(t) {
		if !strings.HasPrefix(target, root+"/") {
			continue
		}
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			out = append(out, strconv.Itoa(fd)+" "+target)
		}
	}
	return out
}

func descriptors(t *testing.T) map[int]string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
			out[fd] = target
		}
	}
	return out
}

// removeRoot removes a snapshot root with its sealed snapshots and any temporary
// build a killed child left (TempDir's cleanup cannot remove 0555 directories as an
// ordinary user).
func removeRoot(root string) {
	if fd, err := unix.Open(filepath.Dir(root), unix.O_RDONLY|unix.O_DIRECTORY, 0); err == nil {
		_ = removeAt(fd, filepath.Base(root))
		unix.Close(fd)
	}
}
