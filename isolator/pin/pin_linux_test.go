package pin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

func ino(t *testing.T, p string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// A symlink is followed only outside the untrusted roots; what is pinned is the file
// the walk ended on, whatever happens to the path afterwards.
func TestOpen(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	for _, d := range []string{"proj/sub", "dotfiles", "other"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "dotfiles/gitconfig"), []byte("x"), 0o644)
	os.Symlink("dotfiles/gitconfig", filepath.Join(root, "gitconfig"))       // the user's link
	os.Symlink("../other", filepath.Join(proj, "planted"))                   // in the project
	os.Symlink(filepath.Join(root, "proj"), filepath.Join(root, "projlink")) // the user's, into the project
	untrusted := []string{proj}

	tests := []struct {
		path string
		want string // the file pinned, or "" for ErrUntrustedLink
	}{
		{path: filepath.Join(proj, "sub"), want: filepath.Join(proj, "sub")},
		{path: filepath.Join(root, "gitconfig"), want: filepath.Join(root, "dotfiles/gitconfig")},
		{path: filepath.Join(proj, "planted"), want: ""},
		{path: filepath.Join(proj, "planted/x"), want: ""},
		{path: filepath.Join(root, "projlink/sub"), want: filepath.Join(proj, "sub")},
		{path: filepath.Join(root, "projlink/planted"), want: ""},
		{path: proj, want: proj},
	}
	for _, tt := range tests {
		src, err := Open(tt.path, untrusted)
		switch {
		case tt.want == "" && !errors.Is(err, ErrUntrustedLink):
			t.Errorf("%s: err %v, want ErrUntrustedLink", tt.path, err)
		case tt.want != "" && err != nil:
			t.Errorf("%s: %v", tt.path, err)
		case tt.want != "" && src.ID.Ino != ino(t, tt.want):
			t.Errorf("%s: pinned inode %d, want %s's", tt.path, src.ID.Ino, tt.want)
		}
		src.Close()
	}
	if _, err := Open(filepath.Join(proj, "missing"), untrusted); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing source: %v", err)
	}
	if _, err := Open("relative", nil); err == nil {
		t.Error("a relative path was pinned")
	}
}

// The descriptor stays on the directory it opened when the path is swapped for a
// symlink afterwards (what bwrap mounts is what was checked).
func TestOpenThenSwap(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	os.MkdirAll(sub, 0o755)
	os.MkdirAll(filepath.Join(root, "other"), 0o755)
	src, err := Open(sub, []string{root})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	want := ino(t, sub)
	os.Rename(sub, filepath.Join(root, "moved"))
	os.Symlink("other", sub)
	var st syscall.Stat_t
	if err := syscall.Fstat(int(src.File.Fd()), &st); err != nil || st.Ino != want || !src.Dir {
		t.Fatalf("after the swap the descriptor shows inode %d (%v), want %d", st.Ino, err, want)
	}
}

// Plan pins every bind and the mask source, drops a vanished optional bind, and
// refuses a missing one; Apply gives each mount its identity.
func TestPlan(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	os.MkdirAll(filepath.Join(proj, ".git/hooks"), 0o755)
	empty := filepath.Join(root, "empty")
	os.WriteFile(empty, nil, 0o444)
	p := &isolator.Plan{
		Project:   isolator.Project{Dir: proj},
		EmptyFile: empty,
		Mounts: []isolator.Mount{
			{Kind: isolator.Bind, Source: proj, Dest: proj},
			{Kind: isolator.Bind, Source: filepath.Join(root, "gone"), Dest: "/gone", Optional: true},
			{Kind: isolator.Bind, Source: filepath.Join(proj, ".git/hooks"), Dest: filepath.Join(proj, ".git/hooks"), ReadOnly: true},
			{Kind: isolator.MaskFile, Dest: filepath.Join(proj, ".env")},
			{Kind: isolator.TmpDir, Dest: "/x"},
		},
	}
	s, err := Plan(p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pp, index := s.Apply()
	if len(pp.Mounts) != 4 || index[1] != 2 {
		t.Fatalf("mounts %+v, index %v", pp.Mounts, index)
	}
	wants := []string{proj, filepath.Join(proj, ".git/hooks"), empty}
	for i, w := range wants {
		if pp.Mounts[i].ID == nil || pp.Mounts[i].ID.Ino != ino(t, w) {
			t.Errorf("mount %d: ID %+v, want %s's", i, pp.Mounts[i].ID, w)
		}
	}
	if pp.Mounts[3].ID != nil || p.Mounts[0].ID != nil {
		t.Error("a tmpfs got an ID, or the pinned Plan was changed")
	}
	p.Mounts[1].Optional = false
	if _, err := Plan(p); !errors.Is(err, isolator.ErrProtection) {
		t.Errorf("a missing source: %v", err)
	}
}

// BootID is the kernel's boot id as the file holds it, without the newline.
func TestBootID(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Skipf("no boot id here: %v", err)
	}
	want := string(b[:len(b)-1])
	if got := BootID(); got != want || len(got) != 36 {
		t.Fatalf("BootID() = %q, want %q", got, want)
	}
}

// A bind source reached through a symlink inside a directory the sandbox can write
// is refused, also when that directory is named twice (the project, and a read-write
// bind of it) and reached through a trusted link of its own (alias -> real).
func TestPlanRefusesLinkInWritable(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	proj := filepath.Join(real, "proj")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{proj, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(real, filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(proj, "planted")); err != nil {
		t.Fatal(err)
	}
	aliased := filepath.Join(root, "alias", "proj")
	p := &isolator.Plan{
		Project: isolator.Project{Dir: aliased},
		Mounts: []isolator.Mount{
			{Kind: isolator.Bind, Source: aliased, Dest: aliased},
			{Kind: isolator.Bind, Source: filepath.Join(aliased, "planted"), Dest: "/data", ReadOnly: true},
		},
	}
	if s, err := Plan(p); !errors.Is(err, ErrUntrustedLink) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("a source through a link in the project: %v, want ErrUntrustedLink", err)
	}
}

// Anchors gives the pinned directory of each anchor, reachable through ProcPath after
// a concurrent session swapped its name for a symlink.
func TestAnchorsProcPath(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	sub := filepath.Join(proj, "sub")
	os.MkdirAll(sub, 0o755)
	os.MkdirAll(filepath.Join(root, "other"), 0o755)
	os.WriteFile(filepath.Join(sub, "marker"), []byte("PROJECT"), 0o644)
	p := &isolator.Plan{
		Project: isolator.Project{Dir: proj},
		Mounts: []isolator.Mount{
			{Kind: isolator.Bind, Source: proj, Dest: proj},
			{Kind: isolator.Bind, Source: sub, Dest: sub, Anchor: true},
			{Kind: isolator.MaskFile, Dest: filepath.Join(sub, ".env")},
		},
	}
	s, err := Plan(p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := s.Anchors()
	if len(a) != 1 || a[sub] == nil {
		t.Fatalf("anchors %v, want %s only", a, sub)
	}
	if err := os.Rename(sub, sub+".x"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../other", sub); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(a[sub].ProcPath(), "marker")); err != nil || string(b) != "PROJECT" {
		t.Fatalf("through %s after the swap: %q, %v", a[sub].ProcPath(), b, err)
	}
}

// Check refuses what a launch's PrepareHost and Plan refuse, with their errors, and
// passes what a launch creates (the private directories and the mask source) missing;
// it creates nothing.
func TestCheck(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	home := filepath.Join(root, "home") // the sandbox home: not made yet
	outside := filepath.Join(root, "outside")
	for _, d := range []string{proj, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	empty := filepath.Join(root, "state", "empty")
	plan := func(extra ...isolator.Mount) *isolator.Plan {
		return &isolator.Plan{
			Project:     isolator.Project{Dir: proj},
			SandboxHome: home,
			PrivateDirs: []string{home},
			EmptyFile:   empty,
			Mounts: append([]isolator.Mount{
				{Kind: isolator.Bind, Source: home, Dest: "/home/u"},
				{Kind: isolator.Bind, Source: proj, Dest: proj},
			}, extra...),
		}
	}
	if err := Check(plan()); err != nil {
		t.Fatalf("a first launch's plan: %v", err)
	}
	for _, p := range []string{home, empty} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("Check made %s", p)
		}
	}
	if err := os.Symlink(outside, filepath.Join(proj, "planted")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		plan  *isolator.Plan
		setup func()
	}{
		{name: "a source through a link in the project",
			plan: plan(isolator.Mount{Kind: isolator.Bind, Source: filepath.Join(proj, "planted"), Dest: "/data", ReadOnly: true, Why: "test"})},
		{name: "a missing source", plan: plan(isolator.Mount{Kind: isolator.Bind, Source: filepath.Join(root, "gone"), Dest: "/gone", Why: "test"})},
		{name: "a destination through a link in the project",
			plan: plan(isolator.Mount{Kind: isolator.MaskFile, Dest: filepath.Join(proj, "planted", ".env"), Why: "mask"})},
		{name: "a mask source that is not empty", plan: plan(),
			setup: func() {
				if err := os.MkdirAll(filepath.Dir(empty), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(empty, []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, c := range cases {
		if c.setup != nil {
			c.setup()
		}
		// What the launch says: PrepareHost, then Plan, on a copy of the host.
		want := isolator.PrepareHost(c.plan)
		if want == nil {
			s, err := Plan(c.plan)
			if want = err; s != nil {
				s.Close()
			}
		}
		if err := os.RemoveAll(home); err != nil {
			t.Fatal(err)
		}
		got := Check(c.plan)
		if want == nil || got == nil || got.Error() != want.Error() || !errors.Is(got, isolator.ErrProtection) {
			t.Errorf("%s: Check: %v\nwant the launch's %v", c.name, got, want)
		}
	}
}

// Removed names the pinned sources removed or replaced on the host since they were
// pinned, and only those: bwrap cannot resolve them through /proc/self/fd.
func TestRemoved(t *testing.T) {
	root := t.TempDir()
	keep, gone, file := filepath.Join(root, "keep"), filepath.Join(root, "gone"), filepath.Join(root, "file")
	for _, d := range []string{keep, gone} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &isolator.Plan{Mounts: []isolator.Mount{
		{Kind: isolator.Bind, Source: keep, Dest: "/keep"},
		{Kind: isolator.Bind, Source: gone, Dest: "/gone"},
		{Kind: isolator.Bind, Source: file, Dest: "/file"},
		{Kind: isolator.TmpDir, Dest: "/x"},
	}}
	s, err := Plan(p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Removed(); len(got) != 0 {
		t.Fatalf("Removed before any removal: %q", got)
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	s.Close() // as after bwrap's start: Removed goes by the paths
	if got := s.Removed(); len(got) != 1 || got[0] != gone {
		t.Errorf("Removed: %q, want [%s]", got, gone)
	}
	// A file replaced at its path is named too.
	if err := os.Rename(file, file+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := s.Removed(); len(got) != 2 || got[0] != gone || got[1] != file {
		t.Errorf("Removed: %q, want [%s %s]", got, gone, file)
	}
}

// Gone passes a setup failure on unchanged while every source is where it was
// pinned, and with none pinned (nil); once one is removed, the error names it, says
// the command did not run, and keeps the failure and its class.
func TestGone(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Plan(&isolator.Plan{Mounts: []isolator.Mount{{Kind: isolator.Bind, Source: dir, Dest: "/data"}}})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	failure := fmt.Errorf("%w: the engine could not mount /proc/1/fd/3", isolator.ErrUnavailable)
	if err := s.Gone("the docker engine", failure); err != failure {
		t.Errorf("Gone with every source in place: %v, want the failure itself", err)
	}
	if err := (*Set)(nil).Gone("podman", failure); err != failure {
		t.Errorf("Gone of a nil Set: %v, want the failure itself", err)
	}
	if err := s.Gone("podman", nil); err != nil {
		t.Errorf("Gone without a failure: %v", err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	err = s.Gone("the docker engine", failure)
	want := "protection could not be applied: " + dir + " was removed or replaced on the host while the sandbox was being set up, so the docker engine could not mount it as devsandbox checked it, and the command did not run: run it again once it is back, or without what binds it. The failure: isolator unavailable: the engine could not mount /proc/1/fd/3"
	if err == nil || err.Error() != want {
		t.Fatalf("Gone after the removal:\n%v\nwant\n%s", err, want)
	}
	if !errors.Is(err, failure) || !errors.Is(err, isolator.ErrProtection) || isolator.IsUnavailable(err) {
		t.Errorf("Gone's error %v does not keep the failure, or is not a protection's failure (mode auto must not run the command unsandboxed)", err)
	}
	// A failure told with a guess at its cause: the guess goes, the failure stays.
	guessed := isolator.WithGuess(failure, " (if the engine runs in another mount namespace: upgrade it)")
	err = s.Gone("the docker engine", guessed)
	if err == nil || err.Error() != want {
		t.Fatalf("Gone of a guessed failure after the removal:\n%v\nwant\n%s", err, want)
	}
	if !errors.Is(err, failure) || !errors.Is(err, isolator.ErrProtection) || isolator.IsUnavailable(err) {
		t.Errorf("Gone's error %v does not keep the guessed failure, or is not a protection's failure", err)
	}
}

// An optional file mask of a host socket (its Source) is dropped when the socket is
// gone by launch; one still there is kept, and MasksGone names it once it goes.
func TestPlanDropsVanishedSocketMasks(t *testing.T) {
	root := t.TempDir()
	stays, gone := filepath.Join(root, "stays.sock"), filepath.Join(root, "gone.sock")
	for _, s := range []string{stays, gone} {
		if err := syscall.Mknod(s, syscall.S_IFSOCK|0o666, 0); err != nil {
			t.Fatal(err)
		}
	}
	p := &isolator.Plan{Mounts: []isolator.Mount{
		{Kind: isolator.MaskFile, Source: gone, Dest: "/view/gone.sock", Optional: true},
		{Kind: isolator.MaskFile, Source: stays, Dest: "/view/stays.sock", Optional: true},
		{Kind: isolator.MaskFile, Dest: "/view/.env"},
	}}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	s, err := Plan(p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pp, index := s.Apply()
	if len(pp.Mounts) != 2 || pp.Mounts[0].Dest != "/view/stays.sock" || pp.Mounts[1].Dest != "/view/.env" || fmt.Sprint(index) != "[1 2]" {
		t.Fatalf("mounts %+v, index %v: want the gone socket's mask dropped", pp.Mounts, index)
	}
	if got := s.MasksGone(); len(got) != 0 {
		t.Fatalf("MasksGone before any removal: %q", got)
	}
	if err := os.Remove(stays); err != nil {
		t.Fatal(err)
	}
	if got := s.MasksGone(); fmt.Sprint(got) != "["+stays+"]" {
		t.Errorf("MasksGone: %q, want [%s]", got, stays)
	}
}
