package cgroup

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeTree makes cgroup directories in a temporary directory the way the kernel
// does: with the interface files of their hierarchy. rmdir refuses a cgroup that
// holds processes (EBUSY), and removes its files with it.
type fakeTree struct {
	t  *testing.T
	hs []Hierarchy
}

func (f *fakeTree) tree() tree {
	return tree{
		mkdir: func(p string) error {
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
			i := slices.IndexFunc(f.hs, func(h Hierarchy) bool { return h.Parent == filepath.Dir(p) })
			files := map[string]string{"cgroup.procs": ""}
			h := f.hs[i]
			for _, c := range h.Controllers {
				switch {
				case c == Pids:
					files["pids.max"], files["pids.events"] = "max\n", "max 0\n"
				case c == Memory && h.V2:
					files["memory.max"], files["memory.swap.max"], files["memory.events"] = "max\n", "max\n", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n"
				case c == Memory:
					files["memory.limit_in_bytes"], files["memory.memsw.limit_in_bytes"], files["memory.oom_control"] = "9223372036854771712\n", "9223372036854771712\n", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n"
				case c == CPU && h.V2:
					files["cpu.max"] = "max 100000\n"
				case c == CPU:
					files["cpu.cfs_period_us"], files["cpu.cfs_quota_us"] = "100000\n", "-1\n"
				}
			}
			if h.V2 {
				files["cgroup.events"], files["cgroup.kill"] = "populated 0\nfrozen 0\n", ""
			}
			for name, v := range files {
				if err := os.WriteFile(filepath.Join(p, name), []byte(v), 0o644); err != nil {
					return err
				}
			}
			return nil
		},
		rmdir: func(p string) error {
			b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			if err != nil {
				return err
			}
			if len(strings.TrimSpace(string(b))) > 0 {
				return syscall.EBUSY
			}
			return os.RemoveAll(p)
		},
	}
}

// newFakeTree returns the parents of a v1 host (pids, memory, cpu hierarchies) and a
// v2 host (one delegated parent), each with its interface files.
func newFakeTree(t *testing.T) (*fakeTree, []Hierarchy, []Hierarchy) {
	root := t.TempDir()
	var v1 []Hierarchy
	for _, c := range Controllers {
		v1 = append(v1, Hierarchy{Parent: filepath.Join(root, "v1", c, "ci"), Controllers: []string{c}})
	}
	v2 := []Hierarchy{{V2: true, Parent: filepath.Join(root, "v2", "ci.slice"), Controllers: Controllers, Enable: []string{CPU}}}
	for _, h := range append(append([]Hierarchy{}, v1...), v2...) {
		if err := os.MkdirAll(h.Parent, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(v2[0].Parent, "cgroup.subtree_control"), []byte("memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return &fakeTree{t: t, hs: append(append([]Hierarchy{}, v1...), v2...)}, v1, v2
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCreateWritesLimits(t *testing.T) {
	ft, v1, v2 := newFakeTree(t)
	lim := Limits{Pids: 64, Memory: 256 << 20, CPUs: 1.5}
	for _, tc := range []struct {
		name  string
		hs    []Hierarchy
		files map[string]string // path below the hierarchy's parent's session cgroup: content
	}{
		{"v1", v1, map[string]string{
			"pids/pids.max":                      "64",
			"memory/memory.limit_in_bytes":       "268435456",
			"memory/memory.memsw.limit_in_bytes": "268435456",
			"cpu/cpu.cfs_period_us":              "100000",
			"cpu/cpu.cfs_quota_us":               "150000",
			"memory/cgroup.procs":                "",
		}},
		{"v2", v2, map[string]string{
			"pids.max":        "64",
			"memory.max":      "268435456",
			"memory.swap.max": "0",
			"cpu.max":         "150000 100000",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ft.tree().create(tc.hs, "0123abcd", lim, false)
			if err != nil {
				t.Fatal(err)
			}
			if !isSessionName(s.Name) || !strings.HasPrefix(s.Name, "devsandbox-0123abcd-") {
				t.Errorf("session name %q", s.Name)
			}
			var want []string
			for _, h := range tc.hs {
				want = append(want, filepath.Join(h.Parent, s.Name))
			}
			if !reflect.DeepEqual(s.Dirs(), want) {
				t.Errorf("dirs %q, want %q", s.Dirs(), want)
			}
			for rel, content := range tc.files {
				var path string
				if tc.hs[0].V2 {
					path = filepath.Join(tc.hs[0].Parent, s.Name, rel)
				} else {
					c, file, _ := strings.Cut(rel, "/")
					path = filepath.Join(filepath.Dir(filepath.Dir(tc.hs[0].Parent)), c, "ci", s.Name, file)
				}
				if got := read(t, filepath.Dir(path), filepath.Base(path)); strings.TrimSpace(got) != content {
					t.Errorf("%s = %q, want %q", rel, got, content)
				}
			}
			if tc.hs[0].V2 {
				if got := read(t, tc.hs[0].Parent, "cgroup.subtree_control"); got != "+cpu" {
					t.Errorf("the parent's cgroup.subtree_control got %q, want +cpu enabled", got)
				}
				if fd, ok := s.CloneFD(); !ok || fd < 0 {
					t.Errorf("a single v2 directory has no descriptor to clone into")
				}
			} else if _, ok := s.CloneFD(); ok {
				t.Errorf("v1 directories offered for CLONE_INTO_CGROUP")
			}
			if err := s.Remove(); err != nil {
				t.Fatal(err)
			}
			for _, d := range want {
				if _, err := os.Stat(d); !os.IsNotExist(err) {
					t.Errorf("%s left after Remove: %v", d, err)
				}
			}
		})
	}
}

func TestCreateHoldsTheCaps(t *testing.T) {
	ft, _, v2 := newFakeTree(t)
	v2[0].Caps = Limits{Pids: 100, Memory: 128 << 20, CPUs: 2}
	ft.hs[len(ft.hs)-1] = v2[0]
	s, err := ft.tree().create(v2, "p", Limits{Pids: 4096, CPUs: 0.5}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Remove()
	d := s.Dirs()[0]
	for file, want := range map[string]string{"pids.max": "100", "memory.max": "134217728", "memory.swap.max": "0", "cpu.max": "50000 100000"} {
		if got := read(t, d, file); got != want {
			t.Errorf("%s = %q, want %q (the stricter of the limit asked and the cap)", file, got, want)
		}
	}
}

func TestCreateOnlyTheLimitsAsked(t *testing.T) {
	ft, v1, _ := newFakeTree(t)
	s, err := ft.tree().create(v1[:1], "p", Limits{Pids: 4096}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Remove()
	if got := read(t, s.Dirs()[0], "pids.max"); got != "4096" {
		t.Errorf("pids.max %q", got)
	}
	if len(s.Dirs()) != 1 {
		t.Errorf("dirs %q: one hierarchy was asked for", s.Dirs())
	}
}

func TestCreateRefusesSwapItCannotTurnOff(t *testing.T) {
	ft, v1, _ := newFakeTree(t)
	inner := ft.tree()
	noSwap := tree{rmdir: inner.rmdir, mkdir: func(p string) error {
		if err := inner.mkdir(p); err != nil {
			return err
		}
		return os.Remove(filepath.Join(p, "memory.memsw.limit_in_bytes"))
	}}
	if _, err := noSwap.create(v1[1:2], "p", Limits{Memory: 64 << 20}, true); err == nil || !strings.Contains(err.Error(), "out of swap") {
		t.Errorf("swap without accounting: %v", err)
	}
	ents, _ := os.ReadDir(v1[1].Parent)
	if len(ents) != 0 {
		t.Errorf("a refused session cgroup was left: %v", ents)
	}
	s, err := noSwap.create(v1[1:2], "p", Limits{Memory: 64 << 20}, false)
	if err != nil {
		t.Errorf("no swap on the host, no swap accounting needed: %v", err)
	} else {
		s.Remove()
	}
}

func TestQuota(t *testing.T) {
	for cpus, want := range map[float64]int64{1: 100000, 1.5: 150000, 0.01: 1000, 0.333: 33300, 16: 1600000} {
		if got, err := Quota(cpus); err != nil || got != want {
			t.Errorf("Quota(%g) = %d, %v; want %d", cpus, got, err, want)
		}
	}
	if _, err := Quota(0.001); err == nil || !strings.Contains(err.Error(), "limits.cpus = 0.001") {
		t.Errorf("Quota(0.001): %v", err)
	}
}

func TestOOMKills(t *testing.T) {
	ft, v1, v2 := newFakeTree(t)
	for _, hs := range [][]Hierarchy{v1, v2} {
		s, err := ft.tree().create(hs, "p", Limits{Memory: 64 << 20}, false)
		if err != nil {
			t.Fatal(err)
		}
		if n := s.OOMKills(); n != 0 {
			t.Errorf("a fresh session cgroup counts %d kills", n)
		}
		i := slices.IndexFunc(hs, func(h Hierarchy) bool { return slices.Contains(h.Controllers, Memory) })
		file, content := "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"
		if hs[i].V2 {
			file, content = "memory.events", "low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\n"
		}
		if err := os.WriteFile(filepath.Join(hs[i].Parent, s.Name, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if n := s.OOMKills(); n < 1 {
			t.Errorf("%s: OOMKills = %d after a kill", file, n)
		}
		s.Remove()
	}
	s, err := ft.tree().create(v1[:1], "p", Limits{Pids: 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Remove()
	if n := s.OOMKills(); n != -1 {
		t.Errorf("no memory controller, OOMKills = %d", n)
	}
}

func TestPidsRefused(t *testing.T) {
	ft, v1, v2 := newFakeTree(t)
	for _, hs := range [][]Hierarchy{v1, v2} {
		s, err := ft.tree().create(hs, "p", Limits{Pids: 64}, false)
		if err != nil {
			t.Fatal(err)
		}
		if n := s.PidsRefused(); n != 0 {
			t.Errorf("a fresh session cgroup counts %d refused forks", n)
		}
		i := slices.IndexFunc(hs, func(h Hierarchy) bool { return slices.Contains(h.Controllers, Pids) })
		if err := os.WriteFile(filepath.Join(hs[i].Parent, s.Name, "pids.events"), []byte("max 913\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if n := s.PidsRefused(); n != 913 {
			t.Errorf("PidsRefused = %d, want 913", n)
		}
		s.Remove()
	}
	s, err := ft.tree().create(v1[1:2], "p", Limits{Memory: 64 << 20}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Remove()
	if n := s.PidsRefused(); n != -1 {
		t.Errorf("no pids controller, PidsRefused = %d", n)
	}
}

func TestSweep(t *testing.T) {
	ft, v1, v2 := newFakeTree(t)
	fs := ft.tree()
	all := append(append([]Hierarchy{}, v1...), v2...)
	// A live session: locked.
	live, err := fs.create(all, "p", Limits{Pids: 8}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Remove()
	// Sessions of killed runs: their lock went with the process.
	dead, err := fs.create(all, "p", Limits{Pids: 8}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dead.dirs {
		unix.Close(d.fd)
	}
	busy, err := fs.create(v1[:1], "p", Limits{Pids: 8}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range busy.dirs {
		unix.Close(d.fd)
	}
	if err := os.WriteFile(filepath.Join(busy.Dirs()[0], "cgroup.procs"), []byte("4242\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Not ours: a systemd scope of the same prefix, another name, a file.
	for _, name := range []string{"devsandbox-p-s1.scope", "job-9", "devsandbox-p-0011223344556677x"} {
		if err := os.Mkdir(filepath.Join(v1[0].Parent, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got := fs.sweep(all, true); !reflect.DeepEqual(got, dead.Dirs()) {
		t.Errorf("a dry sweep names %q, want the dead session's %q", got, dead.Dirs())
	}
	for _, d := range dead.Dirs() {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("a dry sweep removed %s: %v", d, err)
		}
	}
	got := fs.sweep(all, false)
	if !reflect.DeepEqual(got, dead.Dirs()) {
		t.Errorf("swept %q, want the dead session's %q", got, dead.Dirs())
	}
	for _, d := range append(live.Dirs(), busy.Dirs()...) {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s (live or not empty) was swept: %v", d, err)
		}
	}
	for _, name := range []string{"devsandbox-p-s1.scope", "job-9", "devsandbox-p-0011223344556677x"} {
		if _, err := os.Stat(filepath.Join(v1[0].Parent, name)); err != nil {
			t.Errorf("%s is not a session cgroup, but was swept", name)
		}
	}
}

func TestIsSessionName(t *testing.T) {
	for name, want := range map[string]bool{
		"devsandbox-0123abcd-00112233445566ff": true,
		"devsandbox-00112233445566ff":          false,
		"devsandbox-p-00112233445566FF":        false,
		"devsandbox-p-s-20240101-abc.scope":    false,
		"other-0123abcd-00112233445566ff":      false,
	} {
		if got := isSessionName(name); got != want {
			t.Errorf("isSessionName(%q) = %v", name, got)
		}
	}
}
