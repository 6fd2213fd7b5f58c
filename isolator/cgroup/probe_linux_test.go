package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/internal/mountinfo"
)

// fakeHost is a host in a temporary directory: /proc/self/cgroup, mountinfo and
// swaps, and cgroup directories with the interface files given.
type fakeHost struct {
	t        *testing.T
	root     string
	readOnly []string // host paths Writable denies
}

func newFakeHost(t *testing.T, self, mountinfo string) *fakeHost {
	t.Helper()
	f := &fakeHost{t: t, root: t.TempDir()}
	f.file("/proc/self/cgroup", self)
	f.file("/proc/self/mountinfo", mountinfo)
	f.file("/proc/swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n")
	return f
}

// file writes a file at the host path p.
func (f *fakeHost) file(p, content string) {
	f.t.Helper()
	full := filepath.Join(f.root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// cgroup makes the cgroup directory at the host path dir with files.
func (f *fakeHost) cgroup(dir string, files map[string]string) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Join(f.root, dir), 0o755); err != nil {
		f.t.Fatal(err)
	}
	for name, v := range files {
		f.file(filepath.Join(dir, name), v)
	}
}

func (f *fakeHost) host() Host {
	return Host{Root: f.root, Writable: func(p string) bool {
		for _, ro := range f.readOnly {
			if p == ro || strings.HasPrefix(p, ro+"/") {
				return false
			}
		}
		return true
	}}
}

// This machine's kind: cgroup v1 controllers, each in its own hierarchy, and an
// empty cgroup v2 hierarchy at /sys/fs/cgroup/unified.
const (
	hybridSelf = `9:name=systemd:/
8:pids:/
4:memory:/process_api/f23a
2:cpuacct:/
1:cpu:/
0::/
`
	hybridMounts = `24 1 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec shared:8 - tmpfs tmpfs rw,mode=755
31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu
32 30 0:28 / /sys/fs/cgroup/cpuacct rw,relatime shared:10 - cgroup cgroup rw,cpuacct
33 30 0:29 / /sys/fs/cgroup/memory rw,relatime shared:11 - cgroup cgroup rw,memory
34 30 0:30 / /sys/fs/cgroup/pids rw,relatime shared:12 - cgroup cgroup rw,pids
35 30 0:31 / /sys/fs/cgroup/unified rw,relatime shared:13 - cgroup2 cgroup2 rw
`
	v2Mounts = `30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:8 - cgroup2 cgroup2 rw,nsdelegate
`
)

func hybrid(t *testing.T) *fakeHost {
	f := newFakeHost(t, hybridSelf, hybridMounts)
	f.cgroup("/sys/fs/cgroup/pids", map[string]string{"cgroup.procs": "1\n"})
	f.cgroup("/sys/fs/cgroup/memory/process_api/f23a", map[string]string{"memory.limit_in_bytes": "9223372036854771712\n", "memory.memsw.limit_in_bytes": "9223372036854771712\n"})
	f.cgroup("/sys/fs/cgroup/cpu", map[string]string{"cpu.cfs_quota_us": "-1\n"})
	f.cgroup("/sys/fs/cgroup/unified", map[string]string{"cgroup.controllers": "\n", "cgroup.procs": "1\n"})
	return f
}

// v2 is a cgroup v2 host on which devsandbox runs in the cgroup self, under parents
// that enable the controllers enabled and offer avail.
func v2(t *testing.T, self string, avail, enabled string) *fakeHost {
	f := newFakeHost(t, "0::"+self+"\n", v2Mounts)
	f.cgroup("/sys/fs/cgroup", map[string]string{"cgroup.controllers": "cpuset cpu io memory pids\n", "cgroup.subtree_control": "cpu memory pids\n", "cgroup.procs": "1\n"})
	dir := filepath.Join("/sys/fs/cgroup", self)
	if self != "/" {
		parent := filepath.Dir(dir)
		if parent != "/sys/fs/cgroup" {
			f.cgroup(parent, map[string]string{"cgroup.type": "domain\n", "cgroup.controllers": avail + "\n", "cgroup.subtree_control": enabled + "\n", "cgroup.procs": ""})
		}
		f.cgroup(dir, map[string]string{"cgroup.type": "domain\n", "cgroup.procs": "812\n", "pids.max": "max\n", "memory.max": "max\n", "cpu.max": "max 100000\n"})
	}
	return f
}

func TestProbe(t *testing.T) {
	for _, tc := range []struct {
		name    string
		host    func(t *testing.T) *fakeHost
		want    []Hierarchy
		missing map[string]string // controller ("*": each): a word of why
	}{
		{"cgroup v1 as root: under the cgroup devsandbox runs in, in each hierarchy", hybrid, []Hierarchy{
			{Parent: "/sys/fs/cgroup/pids", Controllers: []string{Pids}},
			{Parent: "/sys/fs/cgroup/memory/process_api/f23a", Controllers: []string{Memory}},
			{Parent: "/sys/fs/cgroup/cpu", Controllers: []string{CPU}},
		}, nil},
		{"cgroup v1, not writable", func(t *testing.T) *fakeHost {
			f := hybrid(t)
			f.readOnly = []string{"/sys/fs/cgroup"}
			return f
		}, nil, map[string]string{Pids: "/sys/fs/cgroup/pids (the cgroup v1 pids hierarchy) is not writable by you", Memory: "not writable", CPU: "not writable"}},
		{"cgroup v1 with swap and no swap accounting", func(t *testing.T) *fakeHost {
			f := hybrid(t)
			f.file("/proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n/swapfile file 1048572 0 -2\n")
			_ = os.Remove(filepath.Join(f.root, "/sys/fs/cgroup/memory/process_api/f23a/memory.memsw.limit_in_bytes"))
			return f
		}, []Hierarchy{
			{Parent: "/sys/fs/cgroup/pids", Controllers: []string{Pids}},
			{Parent: "/sys/fs/cgroup/cpu", Controllers: []string{CPU}},
		}, map[string]string{Memory: "swapaccount=1"}},
		{"cgroup v1 without CFS bandwidth control", func(t *testing.T) *fakeHost {
			f := hybrid(t)
			_ = os.Remove(filepath.Join(f.root, "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"))
			return f
		}, []Hierarchy{
			{Parent: "/sys/fs/cgroup/pids", Controllers: []string{Pids}},
			{Parent: "/sys/fs/cgroup/memory/process_api/f23a", Controllers: []string{Memory}},
		}, map[string]string{CPU: "CONFIG_CFS_BANDWIDTH"}},
		{"cgroup v2 root cgroup: in it, enabling what is off", func(t *testing.T) *fakeHost {
			f := v2(t, "/", "", "")
			f.file("/sys/fs/cgroup/cgroup.subtree_control", "memory\n")
			return f
		}, []Hierarchy{{V2: true, Parent: "/sys/fs/cgroup", Controllers: []string{Pids, Memory, CPU}, Enable: []string{Pids, CPU}}}, nil},
		{"cgroup v2 leaf under a delegated cgroup: beside it", func(t *testing.T) *fakeHost {
			return v2(t, "/ci.slice/runner", "cpu memory pids", "cpu memory pids")
		}, []Hierarchy{{V2: true, Parent: "/sys/fs/cgroup/ci.slice", Controllers: []string{Pids, Memory, CPU}}}, nil},
		{"cgroup v2 delegated parent without cpu", func(t *testing.T) *fakeHost {
			return v2(t, "/ci.slice/runner", "memory pids", "memory pids")
		}, []Hierarchy{{V2: true, Parent: "/sys/fs/cgroup/ci.slice", Controllers: []string{Pids, Memory}}}, map[string]string{CPU: `cgroup.controllers lists ["memory" "pids"]`}},
		{"cgroup v2, the limits of devsandbox's own cgroup go with it", func(t *testing.T) *fakeHost {
			f := v2(t, "/system.slice/ci.service", "cpu memory pids", "cpu memory pids")
			f.file("/sys/fs/cgroup/system.slice/ci.service/pids.max", "4915\n")
			f.file("/sys/fs/cgroup/system.slice/ci.service/memory.max", "1073741824\n")
			f.file("/sys/fs/cgroup/system.slice/ci.service/cpu.max", "50000 100000\n")
			return f
		}, []Hierarchy{{V2: true, Parent: "/sys/fs/cgroup/system.slice", Controllers: []string{Pids, Memory, CPU}, Caps: Limits{Pids: 4915, Memory: 1 << 30, CPUs: 0.5}}}, nil},
		{"cgroup v2, a limit of devsandbox's own cgroup the session cgroup could not hold", func(t *testing.T) *fakeHost {
			f := v2(t, "/ci.slice/runner", "cpu pids", "cpu pids")
			f.file("/sys/fs/cgroup/ci.slice/runner/memory.max", "1073741824\n")
			return f
		}, nil, map[string]string{"*": "limits memory, and a session cgroup beside it (in /sys/fs/cgroup/ci.slice) could not hold that limit"}},
		{"cgroup v2 parent not delegated", func(t *testing.T) *fakeHost {
			f := v2(t, "/user.slice/session-1.scope", "cpu memory pids", "memory pids")
			f.readOnly = []string{"/sys/fs/cgroup/user.slice"}
			return f
		}, nil, map[string]string{"*": "/sys/fs/cgroup/user.slice is not writable by you (no delegated cgroup v2 subtree here)"}},
		{"cgroup v2 parent would need a controller enabled but holds processes", func(t *testing.T) *fakeHost {
			f := v2(t, "/ci.slice/runner", "cpu memory pids", "memory pids")
			f.file("/sys/fs/cgroup/ci.slice/cgroup.procs", "77\n")
			return f
		}, []Hierarchy{{V2: true, Parent: "/sys/fs/cgroup/ci.slice", Controllers: []string{Pids, Memory}}}, map[string]string{CPU: "does not enable cpu for its children and holds processes"}},
		{"cgroup v2 namespace top with processes", func(t *testing.T) *fakeHost {
			f := v2(t, "/", "", "")
			f.file("/sys/fs/cgroup/cgroup.type", "domain\n")
			return f
		}, nil, map[string]string{"*": "the top of its cgroup namespace"}},
		{"cgroup outside the mounted part", func(t *testing.T) *fakeHost {
			f := v2(t, "/ci.slice/runner", "cpu memory pids", "cpu memory pids")
			f.file("/proc/self/mountinfo", "30 24 0:26 /other /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
			return f
		}, nil, map[string]string{"*": "outside the part of the hierarchy mounted at /sys/fs/cgroup"}},
		{"no cgroups at all", func(t *testing.T) *fakeHost {
			return newFakeHost(t, "", "24 1 0:22 / /sys rw - sysfs sysfs rw\n")
		}, nil, map[string]string{"*": "cgroup v2 is not mounted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := Probe(tc.host(t).host())
			if !reflect.DeepEqual(l.Hierarchies, tc.want) {
				t.Errorf("hierarchies:\n got %+v\nwant %+v", l.Hierarchies, tc.want)
			}
			missing := tc.missing
			if why, ok := missing["*"]; ok {
				missing = map[string]string{Pids: why, Memory: why, CPU: why}
			}
			for c, why := range missing {
				err := l.Missing[c]
				if err == nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), why) {
					t.Errorf("%s: %v, want ErrUnavailable saying %q", c, err, why)
				}
			}
			for c, err := range l.Missing {
				if _, ok := missing[c]; !ok {
					t.Errorf("%s unexpectedly missing: %v", c, err)
				}
			}
		})
	}
}

func TestProbeMounts(t *testing.T) {
	l := Probe(hybrid(t).host())
	want := []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified"}
	if !reflect.DeepEqual(l.Mounts, want) {
		t.Errorf("mounts %q, want %q", l.Mounts, want)
	}
	if l.Swap {
		t.Error("swap in use on a host without a swap area")
	}
}

func TestLayoutFor(t *testing.T) {
	l := Probe(hybrid(t).host())
	hs, err := l.For(Pids, CPU)
	if err != nil || len(hs) != 2 || hs[0].Parent != "/sys/fs/cgroup/pids" || hs[1].Parent != "/sys/fs/cgroup/cpu" {
		t.Errorf("For(pids, cpu) = %+v, %v", hs, err)
	}
	l.Missing[CPU] = errors.New("no cpu here")
	if _, err := l.For(Pids, CPU); err == nil || !strings.Contains(err.Error(), "no cpu here") {
		t.Errorf("For with cpu missing: %v", err)
	}
}

func TestUnescape(t *testing.T) {
	if got := mountinfo.Unescape(`/mnt/with\040space\134x`); got != `/mnt/with space\x` {
		t.Errorf("unescape: %q", got)
	}
}
