package sockdir

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
)

const projectID = "0badcafe"

// stateDir is a state directory under root, long when asked.
func stateDir(root string, long bool) string {
	if long {
		return filepath.Join(root, strings.Repeat("s", 90))
	}
	return filepath.Join(root, "state")
}

// socketDir chooses the socket directory and makes it, as a run does.
func socketDir(h Host, state string) (string, error) {
	d, err := Choose(h, state, projectID)
	if err != nil {
		return "", err
	}
	return Ensure(d, state, projectID, h.UID)
}

// shortTemp is a directory whose paths fit a Unix socket address.
func shortTemp(t *testing.T) string {
	dir, err := os.MkdirTemp("", "dsb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func TestSocketDirChoice(t *testing.T) {
	uid := os.Getuid()
	root := shortTemp(t)
	run := filepath.Join(root, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(root, "loose")
	if err := os.Mkdir(loose, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, runtime string
		want          string
	}{
		{"runtime dir", run, filepath.Join(run, "devsandbox", "0badcafe")},
		{"a runtime dir others may enter is not used", loose, filepath.Join(root, "state", "sock")},
		{"no runtime dir", "", filepath.Join(root, "state", "sock")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := Host{UID: uid, RuntimeDir: tt.runtime}
			chosen, err := Choose(h, stateDir(root, false), projectID)
			if err != nil || chosen != tt.want {
				t.Fatalf("Choose = %q, %v; want %q", chosen, err, tt.want)
			}
			if _, err := os.Lstat(chosen); err == nil && tt.name != "no runtime dir" {
				t.Errorf("Choose made %s", chosen)
			}
			got, err := socketDir(h, stateDir(root, false))
			if err != nil || got != tt.want {
				t.Fatalf("socketDir = %q, %v; want %q", got, err, tt.want)
			}
			if m := mode(t, got); m != os.ModeDir|0o700 {
				t.Errorf("mode %v, want drwx------", m)
			}
		})
	}
}

// TestSocketDirTemp: with no runtime dir and a state path too long for socket paths,
// the directory is a fresh private one in TMPDIR, the same for every session; one
// that changed owner, mode or kind since is replaced, never used.
func TestSocketDirTemp(t *testing.T) {
	uid := os.Getuid()
	tmp, root := shortTemp(t), t.TempDir()
	h := Host{UID: uid, TempDir: tmp}
	state := stateDir(root, true)
	if d, err := Choose(h, state, projectID); err != nil || filepath.Dir(d) != tmp {
		t.Fatalf("Choose = %q, %v", d, err)
	} else if names, _ := os.ReadDir(tmp); len(names) != 0 {
		t.Fatalf("Choose made %v", names)
	}
	first, err := socketDir(h, state)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(first) != tmp || !strings.HasPrefix(filepath.Base(first), "devsandbox-"+strconv.Itoa(uid)+"-") || mode(t, first) != os.ModeDir|0o700 {
		t.Fatalf("first: %q, mode %v", first, mode(t, first))
	}
	if again, err := socketDir(h, state); err != nil || again != first {
		t.Fatalf("second session: %q, %v; want %q", again, err, first)
	}
	for _, spoil := range []func(d string) error{
		func(d string) error { return os.Chmod(d, 0o777) },
		func(d string) error {
			if err := os.Remove(d); err != nil {
				return err
			}
			return os.Symlink(t.TempDir(), d)
		},
		func(d string) error {
			return os.WriteFile(filepath.Join(state, recordName), []byte(t.TempDir()+"\n"), 0o600)
		},
	} {
		prev, _ := socketDir(h, state)
		if err := spoil(prev); err != nil {
			t.Fatal(err)
		}
		got, err := socketDir(h, state)
		if err != nil || got == prev || filepath.Dir(got) != tmp || mode(t, got) != os.ModeDir|0o700 {
			t.Errorf("after spoiling %q: %q, %v", prev, got, err)
		}
	}
}

// TestSocketDirUnsafeTemp: a temporary directory others may write without the sticky
// bit, or that another user owns, is refused (125), never used.
func TestSocketDirUnsafeTemp(t *testing.T) {
	uid := os.Getuid()
	open := shortTemp(t)
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{"writable, not sticky": open}
	if uid == 0 {
		other := shortTemp(t)
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases["another user's"] = other
	}
	for name, tmp := range cases {
		_, err := socketDir(Host{UID: uid, TempDir: tmp}, stateDir(t.TempDir(), true))
		if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "XDG_RUNTIME_DIR") {
			t.Errorf("%s: %v", name, err)
		}
		if names, _ := os.ReadDir(tmp); len(names) != 0 {
			t.Errorf("%s: created %v there", name, names)
		}
	}
}

// TestEnsurePrivate: existing components are checked with Lstat: a symlink or another
// user's directory is refused; one of ours that others may enter is made 0700.
func TestEnsurePrivate(t *testing.T) {
	uid := os.Getuid()
	base := shortTemp(t)
	if err := os.Mkdir(filepath.Join(base, "mine"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ensurePrivate(base, []string{"mine", "sub"}, uid); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"mine", "mine/sub"} {
		if m := mode(t, filepath.Join(base, d)); m != os.ModeDir|0o700 {
			t.Errorf("%s: %v", d, m)
		}
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	if err := ensurePrivate(base, []string{"link", "x"}, uid); !errors.Is(err, isolator.ErrProtection) {
		t.Errorf("through a symlink: %v", err)
	}
	if uid == 0 {
		if err := os.Mkdir(filepath.Join(base, "theirs"), 0o777); err != nil {
			t.Fatal(err)
		}
		_ = os.Chown(filepath.Join(base, "theirs"), 65534, 65534)
		if err := ensurePrivate(base, []string{"theirs"}, uid); !errors.Is(err, isolator.ErrProtection) {
			t.Errorf("another user's directory: %v", err)
		}
	}
}

// Ensure makes only the directories Choose chooses.
func TestEnsureRefusesOthers(t *testing.T) {
	root := shortTemp(t)
	if _, err := Ensure(filepath.Join(root, "elsewhere"), stateDir(root, false), projectID, os.Getuid()); !errors.Is(err, isolator.ErrProtection) {
		t.Errorf("Ensure elsewhere: %v", err)
	}
}

// A socket left by a killed session (nothing accepts) is removed; a live one is kept.
func TestSweep(t *testing.T) {
	dir := t.TempDir()
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: ProxySocket(dir, "dead"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	if err := os.Mkdir(AgentDir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	staleAgent, err := net.ListenUnix("unix", &net.UnixAddr{Name: AgentSocket(dir, "dead"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	staleAgent.SetUnlinkOnClose(false)
	staleAgent.Close()
	liveAgent, err := net.Listen("unix", AgentSocket(dir, "live"))
	if err != nil {
		t.Fatal(err)
	}
	defer liveAgent.Close()
	// Not a socket: never dialled, never removed.
	if err := os.Symlink(ProxySocket(dir, "dead"), AgentSocket(dir, "link")); err != nil {
		t.Fatal(err)
	}
	live, err := net.Listen("unix", ProxySocket(dir, "live"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	old := time.Now().Add(-2 * time.Minute)
	for _, d := range []string{"dead", "live", "young"} {
		if err := os.Mkdir(PublishDir(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	deadPub, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(PublishDir(dir, "dead"), "80.sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	deadPub.SetUnlinkOnClose(false)
	deadPub.Close()
	// What the dead session's sandbox left: a link under a socket's name to a socket
	// that accepts (it must not be dialled, nor keep the directory), and a directory
	// it locked.
	if err := os.Symlink(ProxySocket(dir, "live"), filepath.Join(PublishDir(dir, "dead"), "1.sock")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(PublishDir(dir, "dead"), "locked"), 0); err != nil {
		t.Fatal(err)
	}
	livePub, err := net.Listen("unix", filepath.Join(PublishDir(dir, "live"), "80.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer livePub.Close()
	for _, d := range []string{"dead", "live"} {
		if err := os.Chtimes(PublishDir(dir, d), old, old); err != nil {
			t.Fatal(err)
		}
	}
	Sweep(dir)
	for d, kept := range map[string]bool{"dead": false, "live": true, "young": true} {
		if _, err := os.Lstat(PublishDir(dir, d)); (err == nil) != kept {
			t.Errorf("publish-%s: kept %v, want %v", d, err == nil, kept)
		}
	}
	if _, err := os.Lstat(ProxySocket(dir, "dead")); !os.IsNotExist(err) {
		t.Errorf("stale socket kept: %v", err)
	}
	if _, err := os.Lstat(ProxySocket(dir, "live")); err != nil {
		t.Errorf("live socket removed: %v", err)
	}
	if _, err := os.Lstat(AgentSocket(dir, "dead")); !os.IsNotExist(err) {
		t.Errorf("stale agent socket kept: %v", err)
	}
	if _, err := os.Lstat(AgentSocket(dir, "live")); err != nil {
		t.Errorf("live agent socket removed: %v", err)
	}
	if _, err := os.Lstat(AgentSocket(dir, "link")); err != nil {
		t.Errorf("a link in the agent directory removed: %v", err)
	}
}

// TestSocketDirTempConcurrent: the first sessions of a project, started at once with
// the socket directory in TMPDIR, all get a usable directory. Each records the one it
// made in the state directory; two writing the record at once must not fail either
// (a shared temporary file for the record was renamed away under the second).
func TestSocketDirTempConcurrent(t *testing.T) {
	uid := os.Getuid()
	tmp := shortTemp(t)
	h := Host{UID: uid, TempDir: tmp}
	const sessions = 8
	for round := range 50 {
		state := stateDir(filepath.Join(t.TempDir(), strconv.Itoa(round)), true)
		start := make(chan struct{})
		errs := make(chan error, sessions)
		for range sessions {
			go func() {
				<-start
				d, err := socketDir(h, state)
				if err == nil {
					err = checkPrivate(d, uid)
				}
				errs <- err
			}()
		}
		close(start)
		for range sessions {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: a session's socket directory: %v", round, err)
			}
		}
		if d, ok := recorded(state, tmp, uid); !ok {
			t.Fatalf("round %d: the state directory records %q, not a private directory", round, d)
		}
	}
}

// TestSocketDirTempConverges: the first sessions of a project started at once with
// the socket directory in TMPDIR end with one directory, the one recorded: the first
// recorded wins, the others adopt it and remove their own (a kept container of an
// earlier session would otherwise bind a directory the later sessions do not use, and
// the others' directories were left in TMPDIR for good).
func TestSocketDirTempConverges(t *testing.T) {
	uid := os.Getuid()
	const sessions = 8
	for round := range 50 {
		tmp := shortTemp(t)
		h := Host{UID: uid, TempDir: tmp}
		state := stateDir(filepath.Join(t.TempDir(), strconv.Itoa(round)), true)
		start := make(chan struct{})
		got := make(chan string, sessions)
		for range sessions {
			go func() {
				<-start
				d, err := socketDir(h, state)
				if err != nil {
					d = err.Error()
				}
				got <- d
			}()
		}
		close(start)
		seen := map[string]bool{}
		for range sessions {
			seen[<-got] = true
		}
		rec, _ := recorded(state, tmp, uid)
		left, _ := filepath.Glob(filepath.Join(tmp, tempPrefix(uid)+"*"))
		if len(seen) != 1 || !seen[rec] || len(left) != 1 || left[0] != rec {
			t.Fatalf("round %d: the sessions use %v, the state directory records %q, TMPDIR holds %v; want one directory, the recorded one", round, seen, rec, left)
		}
	}
}
