package isolator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestHostProgram: a program Run would start on the host is refused where the plan's
// sandbox can write it (through the directory the PATH lookup went through, a link
// there, or where it resolves to), and taken elsewhere.
func TestHostProgram(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	bin := filepath.Join(root, "bin")
	ro := filepath.Join(proj, "ro")
	for _, d := range []string{filepath.Join(proj, ".venv", "bin"), bin, ro, filepath.Join(root, "elsewhere")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(proj, ".venv", "bin", "bwrap"), filepath.Join(bin, "bwrap"), filepath.Join(ro, "bwrap")} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A link outside the project to a program in it, and a PATH entry outside
	// that is a link to the project's directory.
	if err := os.Symlink(filepath.Join(proj, ".venv", "bin", "bwrap"), filepath.Join(root, "elsewhere", "bwrap")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(proj, ".venv", "bin"), filepath.Join(root, "venvbin")); err != nil {
		t.Fatal(err)
	}
	p := &Plan{
		User: User{HostHome: filepath.Join(root, "home")},
		Mounts: []Mount{
			{Kind: Bind, Source: proj, Dest: proj, Why: "project"},
			{Kind: Bind, Source: ro, Dest: ro, ReadOnly: true, Why: "a read-only bind"},
		},
	}
	for _, c := range []struct {
		name, path string
		refused    bool
	}{
		{"in the project", filepath.Join(proj, ".venv", "bin", "bwrap"), true},
		{"a link to the project's", filepath.Join(root, "elsewhere", "bwrap"), true},
		{"through a linked PATH entry", filepath.Join(root, "venvbin", "bwrap"), true},
		{"outside every bind", filepath.Join(bin, "bwrap"), false},
		{"under a read-only bind in the project", filepath.Join(ro, "bwrap"), false},
		{"the host's", "/usr/bin/bwrap", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := HostProgram(p, "bubblewrap", c.path)
			if c.refused != (err != nil) {
				t.Fatalf("HostProgram(%s) = %v, want refused %v", c.path, err, c.refused)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, ErrProtection) {
				t.Errorf("error %v is not ErrProtection", err)
			}
			for _, want := range []string{c.path, "remove " + filepath.Dir(c.path) + " from PATH"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
		})
	}
}

// TestUserWritable: the early start's rule, which knows no plan: a bubblewrap in a
// directory the user may write, or a link to one, is not started early.
func TestUserWritable(t *testing.T) {
	d := t.TempDir()
	f := filepath.Join(d, "bwrap")
	if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := UserWritable(f); got == "" {
		t.Errorf("UserWritable(%s) = %q, want the file or its directory", f, got)
	}
	if os.Geteuid() == 0 {
		t.Skip("root may write every directory: the system's bubblewrap is judged only as another user")
	}
	if _, err := os.Stat("/usr/bin/env"); err != nil {
		t.Skip("no /usr/bin/env")
	}
	if got := UserWritable("/usr/bin/env"); got != "" {
		t.Errorf("UserWritable(/usr/bin/env) = %q, want none", got)
	}
	l := filepath.Join(d, "link")
	if err := os.Symlink("/usr/bin/env", l); err != nil {
		t.Fatal(err)
	}
	if got := UserWritable(l); got != d {
		t.Errorf("UserWritable(%s) = %q, want %s, where the user may replace the link", l, got, d)
	}
}

// TestSandboxWritten: where no plan says what a sandbox writes, a program is refused
// in any devsandbox project (found through the record beside its sandbox home), in
// the sandbox homes and the sessions' state, also through a link or another path to
// the same directory, and taken elsewhere. A relative result is refused outright.
func TestSandboxWritten(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "data", "devsandbox")
	state := filepath.Join(root, "state", "devsandbox")
	projA := filepath.Join(root, "src", "a")
	bin := filepath.Join(root, "bin")
	for _, d := range []string{filepath.Join(data, "a-1234", "home", "bin"), filepath.Join(state, "a-1234", "tmp"), filepath.Join(projA, ".venv", "bin"), bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(data, "a-1234", "project"), []byte(projA+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(projA, ".venv", "bin", "podman"), filepath.Join(bin, "podman"), filepath.Join(data, "a-1234", "home", "bin", "podman"), filepath.Join(state, "a-1234", "tmp", "podman")} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Another spelling of project A (a link to it), a link to its program from a
	// directory no project holds, and a link on the way that lies in A.
	if err := os.Symlink(projA, filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(projA, ".venv", "bin", "podman"), filepath.Join(bin, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(bin, "podman"), filepath.Join(projA, "hop")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(projA, "hop"), filepath.Join(bin, "viahop")); err != nil {
		t.Fatal(err)
	}
	// A relative link whose ".." crosses a linked directory: the kernel resolves it
	// from where the link's directory really is (root/src/deep/x, so ../../a/hop is
	// A's), not from the path it was reached by (root/lx/x/../../a/hop, root/a/hop,
	// which is nothing): A's hop, which A's sandbox can point anywhere, is on the way.
	if err := os.MkdirAll(filepath.Join(root, "src", "deep", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "src", "deep"), filepath.Join(root, "lx")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../a/hop", filepath.Join(root, "src", "deep", "x", "tool")); err != nil {
		t.Fatal(err)
	}
	// The same ".." after a linked directory within the target (root/lx/.. is root/src).
	if err := os.Symlink("../lx/../a/hop", filepath.Join(bin, "crossing")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		refused    bool
		names      string
	}{
		{"through a relative link crossing a linked directory", filepath.Join(root, "lx", "x", "tool"), true, projA},
		{"through a link whose target crosses a linked directory", filepath.Join(bin, "crossing"), true, projA},
		{"in another project", filepath.Join(projA, ".venv", "bin", "podman"), true, projA},
		{"through another spelling of the project", filepath.Join(root, "alias", ".venv", "bin", "podman"), true, projA},
		{"a link to a project's", filepath.Join(bin, "linked"), true, projA},
		{"through a link that lies in a project", filepath.Join(bin, "viahop"), true, projA},
		{"in a sandbox home", filepath.Join(data, "a-1234", "home", "bin", "podman"), true, data},
		{"in a session's /tmp", filepath.Join(state, "a-1234", "tmp", "podman"), true, state},
		{"elsewhere", filepath.Join(bin, "podman"), false, ""},
		{"relative", "bin/podman", true, "relative PATH entry"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := SandboxWritten(data, state, "podman", c.path)
			if c.refused != (err != nil) {
				t.Fatalf("SandboxWritten(%s) = %v, want refused %v", c.path, err, c.refused)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, ErrProtection) {
				t.Errorf("error %v is not ErrProtection", err)
			}
			for _, want := range []string{c.path, c.names} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
		})
	}
	// HostProgram applies the same rule beyond its plan's binds: a run in another
	// project (whose plan binds only that one) refuses project A's program.
	p := &Plan{
		User:        User{HostHome: filepath.Join(root, "home")},
		SandboxHome: filepath.Join(data, "b-5678", "home"),
		StateDir:    filepath.Join(state, "b-5678"),
		Mounts:      []Mount{{Kind: Bind, Source: filepath.Join(root, "src", "b"), Dest: filepath.Join(root, "src", "b"), Why: "project"}},
	}
	if err := HostProgram(p, "bubblewrap", filepath.Join(projA, ".venv", "bin", "podman")); err == nil || !strings.Contains(err.Error(), projA) {
		t.Errorf("HostProgram of another project's program = %v, want refused naming %s", err, projA)
	}
	if err := HostProgram(p, "bubblewrap", filepath.Join(bin, "podman")); err != nil {
		t.Errorf("HostProgram of a program no sandbox writes = %v", err)
	}
	if err := HostProgram(p, "bubblewrap", "podman"); err == nil {
		t.Error("HostProgram of a relative path took it")
	}
	// A library's plan of another layout names no root of devsandbox's: the
	// directories above its sandbox home and state are not taken for them.
	lib := &Plan{User: p.User, SandboxHome: filepath.Join(root, "bin", "home"), StateDir: filepath.Join(root, "bin", "state")}
	if err := HostProgram(lib, "bubblewrap", filepath.Join(bin, "podman")); err != nil {
		t.Errorf("HostProgram with a library plan's own layout = %v", err)
	}
	// A PATH entry that is another spelling of this plan's own project.
	if err := os.MkdirAll(filepath.Join(root, "src", "b", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "src", "b"), filepath.Join(root, "balias")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "src", "b", "bin", "bwrap"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := HostProgram(p, "bubblewrap", filepath.Join(root, "balias", "bin", "bwrap")); err == nil {
		t.Error("HostProgram of the project's program through another spelling of it took it")
	}
}

// BenchmarkHostProgramSystem: the judgement of a bubblewrap in /usr/bin, as a launch
// makes it, with a plan binding a project (as a user who cannot write /usr/bin, no
// record is read).
func BenchmarkHostProgramSystem(b *testing.B) {
	p := &Plan{User: User{HostHome: "/home/u"}, Mounts: []Mount{{Kind: Bind, Source: "/home/u/proj", Dest: "/home/u/proj", Why: "project"}}}
	for b.Loop() {
		if err := HostProgram(p, "bubblewrap", "/usr/bin/bwrap"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestProgramDirs: the directories a PATH lookup's result depends on include the
// directory of each link on the way, not only the first and the last: a link in the
// middle, in a directory the user may write, can be pointed anywhere. UserWritable
// (the early start's and doctor's rule) walks the same directories as HostProgram.
func TestProgramDirs(t *testing.T) {
	root := t.TempDir()
	a, b, c := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c")
	for _, d := range []string{a, b, c} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(c, "bwrap"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(c, "bwrap"), filepath.Join(b, "bwrap")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../b/bwrap", filepath.Join(a, "bwrap")); err != nil {
		t.Fatal(err)
	}
	got := programDirs(filepath.Join(a, "bwrap"))
	for _, want := range []string{a, b, c} {
		if !slices.Contains(got, want) {
			t.Errorf("programDirs(%s) = %v, want %s among them", filepath.Join(a, "bwrap"), got, want)
		}
	}
}

// BenchmarkSandboxWritten is the judgement of a program in a directory the user can
// write (~/.local/bin; every directory, as root) that no sandbox writes, with 1, 50
// and 500 projects devsandbox has run: the case that reads what devsandbox knows of
// them.
func BenchmarkSandboxWritten(b *testing.B) {
	for _, n := range []int{1, 50, 500} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			root := b.TempDir()
			data := filepath.Join(root, "data", "devsandbox")
			state := filepath.Join(root, "state", "devsandbox")
			bin := filepath.Join(root, "home", ".local", "bin")
			for _, d := range []string{data, state, bin} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					b.Fatal(err)
				}
			}
			for i := range n {
				proj := filepath.Join(root, "src", fmt.Sprintf("p%d", i))
				p := &Plan{
					SandboxHome: filepath.Join(data, fmt.Sprintf("p%d-1234", i), "home"),
					Project:     Project{Dir: proj},
					Mounts:      []Mount{{Kind: Bind, Source: proj, Dest: proj, Why: "project"}},
				}
				for _, d := range []string{proj, p.SandboxHome} {
					if err := os.MkdirAll(d, 0o755); err != nil {
						b.Fatal(err)
					}
				}
				RecordProject(p)
			}
			prog := filepath.Join(bin, "bwrap")
			if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if err := SandboxWritten(data, state, "bubblewrap", prog); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
