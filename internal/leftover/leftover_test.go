package leftover

import (
	"fmt"
	"slices"
	"testing"

	"github.com/devsandbox/devsandbox/internal/mountinfo"
)

func TestAppeared(t *testing.T) {
	for _, c := range []struct {
		before, now, want []string
	}{
		{nil, nil, nil},
		{[]string{"a", "b"}, []string{"b", "a"}, nil},
		{[]string{"a"}, []string{"c", "a", "b"}, []string{"b", "c"}},
		{[]string{"m"}, []string{"m", "m"}, []string{"m"}}, // a second mount at one place
		{[]string{"a", "gone"}, []string{"a"}, nil},        // what went is no leftover
	} {
		if got := Appeared(c.before, c.now); !slices.Equal(got, c.want) {
			t.Errorf("Appeared(%q, %q) = %q, want %q", c.before, c.now, got, c.want)
		}
	}
}

func TestParseStat(t *testing.T) {
	line := "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 12345 67 18446744073709551615\n"
	comm, state, ppid, start, ok := ParseStat([]byte(line))
	if !ok || comm != "a (b) c" || state != "S" || ppid != 1 || start != 987654 {
		t.Errorf("ParseStat = %q %q %d %d %v", comm, state, ppid, start, ok)
	}
	for _, bad := range []string{"", "12 (x", "12 (x) S 1 2", "12 (x) S one 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 1 1"} {
		if _, _, _, _, ok := ParseStat([]byte(bad)); ok {
			t.Errorf("ParseStat(%q) read a line it should refuse", bad)
		}
	}
}

func TestWatched(t *testing.T) {
	for exe, want := range map[string]bool{
		"devsandbox": true, "devsandbox-proxy": true, "devsandbox-krun": true, "bwrap": true, "pasta": true,
		"pasta.avx2": true, "conmon": true, "sleep": false, "dockerd": false, "bwrapper": false, "": false,
	} {
		if Watched(exe) != want {
			t.Errorf("Watched(%q) = %v", exe, !want)
		}
	}
}

func TestLeftProcs(t *testing.T) {
	const uid = 1001
	rootlesskit := Proc{Pid: 50, PPid: 1, UID: uid, Start: 10, Exe: "rootlesskit"}
	before := map[string]bool{
		rootlesskit.Key(): true,
		Proc{Pid: 60, PPid: 1, UID: 0, Start: 11}.Key():   true, // root's sshd
		Proc{Pid: 70, PPid: 1, UID: uid, Start: 12}.Key(): true,
	}
	now := []Proc{
		{Pid: 1, UID: 0, Start: 1, Exe: "init"},
		rootlesskit,
		{Pid: 51, PPid: 50, UID: uid, Start: 500, Exe: "containerd-shim-runc-v2"}, // the engine's
		{Pid: 52, PPid: 51, UID: uid, Start: 501, Exe: "sh"},                      // and below it
		{Pid: 60, PPid: 1, UID: 0, Start: 11, Exe: "sshd"},
		{Pid: 70, PPid: 1, UID: uid, Start: 999, Exe: "sleep"}, // the pid used again: a new one
		{Pid: 80, PPid: 1, UID: uid, Start: 600, Exe: "catatonit"},
		{Pid: 90, PPid: 1, UID: 0, Start: 700, Exe: "pasta"},
		{Pid: 91, PPid: 1, UID: 0, Start: 701, Exe: "cron"},
		{Pid: 92, PPid: 60, UID: 0, Start: 702, Exe: "devsandbox-proxy"},   // root's parent is not the user's
		{Pid: 45, PPid: 1, UID: uid, Start: 703, Exe: "bwrap", State: "Z"}, // exited: init's to reap
		{Pid: 46, PPid: 1, UID: uid, Start: 704, Exe: "bwrap", State: "S"},
	}
	var got []int
	for _, p := range LeftProcs(before, now, uid, map[int]bool{80: true}) {
		got = append(got, p.Pid)
	}
	if want := []int{46, 70, 90, 92}; !slices.Equal(got, want) {
		t.Errorf("LeftProcs = %v, want %v", got, want)
	}
}

func TestMountKeys(t *testing.T) {
	es := mountinfo.Parse([]byte("36 25 0:32 / /tmp/a\\040b rw,relatime shared:1 - tmpfs tmpfs rw\n" +
		"37 36 8:1 /var/x /run/user/1001/devsandbox/s rw - ext4 /dev/sda1 rw\n"))
	got := MountKeys(es)
	want := []string{"/tmp/a b (tmpfs 0:32 /)", "/run/user/1001/devsandbox/s (ext4 8:1 /var/x)"}
	if !slices.Equal(got, want) {
		t.Errorf("MountKeys = %q, want %q", got, want)
	}
	for i, k := range got {
		if p := MountPoint(k); p != es[i].Point {
			t.Errorf("MountPoint(%q) = %q", k, p)
		}
	}
}

func TestCollapse(t *testing.T) {
	got := Collapse([]string{"/tmp/a", "/tmp/a/x", "/tmp/a/y", "/tmp/ab", "/var/tmp/d/e"})
	if want := []string{"/tmp/a", "/tmp/ab", "/var/tmp/d/e"}; !slices.Equal(got, want) {
		t.Errorf("Collapse = %q, want %q", got, want)
	}
	if got := Collapse(nil); got != nil {
		t.Errorf("Collapse(nil) = %q", got)
	}
}

func TestStateCandidate(t *testing.T) {
	for _, c := range []struct {
		name      string
		owner     int
		candidate bool
	}{
		{"go-build123", 0, false},
		{"devsandbox-it-bin-1", 0, true},
		{"tmp.abc", 1001, true},
		{"x", 100999, true}, // a subordinate id's
		{"x", 1002, false},
	} {
		if got := StateCandidate(c.name, c.owner, 1001); got != c.candidate {
			t.Errorf("StateCandidate(%q, %d) = %v", c.name, c.owner, got)
		}
	}
}

func TestKeptByDesign(t *testing.T) {
	h := Host{UID: 1001, RuntimeDir: "/run/user/1001"}
	for path, kept := range map[string]bool{
		"/dev/shm/devsandbox-1001":                      true,
		"/dev/shm/devsandbox-1001/sess":                 false,
		"/run/user/1001/devsandbox":                     true,
		"/run/user/1001/devsandbox/0a1b2c3d":            false,
		"/run/user/1001/podman/devsandbox-service.lock": true,
		"/run/user/1001/podman/devsandbox-runc-1.sock":  false,
		"/run/user/1001/containers/overlay-containers":  true,
		"/run/user/1001/libpod/tmp":                     true,
		"/run/user/1001/netns":                          true,
		"/run/user/1001/netns/netns-1":                  false,
		"/tmp/devsandbox-1001-abcdefgh":                 false,
		"/run/user/1001/containersX":                    false,
	} {
		if KeptByDesign(path, h) != kept {
			t.Errorf("KeptByDesign(%q) = %v", path, !kept)
		}
	}
}

func TestOwners(t *testing.T) {
	var o Owners
	o.Add("TestA/docker", "/var/tmp/dsb-1/it-aa", "proj-0a1b2c3d", "0a1b2c3d", "")
	o.Add("TestB/krun", "/var/tmp/dsb-1/it-bb", "proj-99999999", "99999999")
	for s, want := range map[string]string{
		`devsandbox-proj-0a1b2c3d-ep-12ab {"dev.devsandbox.name":"proj-0a1b2c3d"}`: "TestA/docker",
		"/run/user/1001/devsandbox/99999999":                                       "TestB/krun",
		"pid 7: sleep 1000 in /var/tmp/dsb-1/it-bb/proj":                           "TestB/krun",
		"/tmp/unrelated": "",
	} {
		if got := o.Of(s); got != want {
			t.Errorf("Of(%q) = %q, want %q", s, got, want)
		}
	}
	if f := Family("TestKeepContainer/docker/reuse"); f != "TestKeepContainer" {
		t.Errorf("Family = %q", f)
	}
	_ = fmt.Sprint(Proc{}) // String must not panic on a zero value
}
