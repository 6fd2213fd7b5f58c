package isolator

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writtenFixture is a user's devsandbox data and state, and project A, whose
// configuration binds tools/bin (outside every project) read-write, after one
// launch of A (RecordProject). A's sandbox then planted a bubblewrap in the bound
// directory and in its own .venv/bin.
type writtenFixture struct {
	root, data, state, projA, bound, local string
	a                                      *Plan
}

func newWrittenFixture(t *testing.T) writtenFixture {
	t.Helper()
	root := t.TempDir()
	f := writtenFixture{
		root:  root,
		data:  filepath.Join(root, "data", "devsandbox"),
		state: filepath.Join(root, "state", "devsandbox"),
		projA: filepath.Join(root, "src", "a"),
		bound: filepath.Join(root, "tools", "bin"),
		local: filepath.Join(root, "home", ".local", "bin"),
	}
	f.a = &Plan{
		User:        User{HostHome: filepath.Join(root, "home")},
		Project:     Project{Dir: f.projA},
		SandboxHome: filepath.Join(f.data, "a-1234", "home"),
		StateDir:    filepath.Join(f.state, "a-1234"),
		Mounts: []Mount{
			{Kind: Bind, Source: f.projA, Dest: f.projA, Why: "project"},
			{Kind: Bind, Source: filepath.Join(f.data, "a-1234", "home"), Dest: filepath.Join(root, "home"), Why: "sandbox home"},
			{Kind: Bind, Source: f.bound, Dest: "/mnt/bin", Why: "sandbox.rw_binds"},
			{Kind: Bind, Source: filepath.Join(root, "ro"), Dest: "/mnt/ro", ReadOnly: true, Why: "sandbox.ro_binds"},
		},
	}
	for _, d := range []string{f.a.SandboxHome, f.state, filepath.Join(f.projA, ".venv", "bin"), f.bound, f.local, filepath.Join(root, "ro")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	RecordProject(f.a)
	for _, d := range []string{filepath.Join(f.projA, ".venv", "bin"), f.bound, f.local, filepath.Join(root, "ro")} {
		if err := os.WriteFile(filepath.Join(d, "bwrap"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestSandboxWrittenOtherProjectsBinds: a directory project A's configuration binds
// read-write lies outside every project, yet A's sandbox writes it. A program there
// is refused for every other run (SandboxWritten, HostProgram with B's plan), naming
// the program, the directory, A and the key; a program in the user's ~/.local/bin,
// or in what A binds read-only, is taken. Before the index, A's binds were unknown
// outside A's own plan.
func TestSandboxWrittenOtherProjectsBinds(t *testing.T) {
	f := newWrittenFixture(t)
	b := &Plan{
		User:        User{HostHome: filepath.Join(f.root, "home")},
		Project:     Project{Dir: filepath.Join(f.root, "src", "b")},
		SandboxHome: filepath.Join(f.data, "b-5678", "home"),
		StateDir:    filepath.Join(f.state, "b-5678"),
		Mounts:      []Mount{{Kind: Bind, Source: filepath.Join(f.root, "src", "b"), Dest: filepath.Join(f.root, "src", "b"), Why: "project"}},
	}
	prog := filepath.Join(f.bound, "bwrap")
	for name, err := range map[string]error{
		"SandboxWritten": SandboxWritten(f.data, f.state, "bubblewrap", prog),
		"HostProgram":    HostProgram(b, "bubblewrap", prog),
	} {
		if err == nil || !errors.Is(err, ErrProtection) {
			t.Errorf("%s of a program in a directory project A binds read-write = %v, want ErrProtection", name, err)
			continue
		}
		for _, want := range []string{prog, f.bound, "sandbox.rw_binds", f.projA, "remove " + f.bound + " from PATH"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s's refusal %q does not name %q", name, err, want)
			}
		}
	}
	for _, ok := range []string{filepath.Join(f.local, "bwrap"), filepath.Join(f.root, "ro", "bwrap")} {
		if err := SandboxWritten(f.data, f.state, "bubblewrap", ok); err != nil {
			t.Errorf("SandboxWritten(%s) = %v, want taken", ok, err)
		}
	}
}

// TestSandboxWrittenAfterRecordRemoved: `devsandbox sandboxes rm` (and prune)
// removes project A's sandbox home and its record; what A's sandbox planted in A's
// directory and in A's read-write binds stays, and is still refused. Before, the
// record was the only knowledge of A, and went with it.
func TestSandboxWrittenAfterRecordRemoved(t *testing.T) {
	f := newWrittenFixture(t)
	if err := os.RemoveAll(filepath.Join(f.data, "a-1234")); err != nil {
		t.Fatal(err)
	}
	for _, prog := range []string{filepath.Join(f.projA, ".venv", "bin", "bwrap"), filepath.Join(f.bound, "bwrap")} {
		err := SandboxWritten(f.data, f.state, "bubblewrap", prog)
		if err == nil || !strings.Contains(err.Error(), f.projA) {
			t.Errorf("SandboxWritten(%s) after A's record was removed = %v, want refused naming %s", prog, err, f.projA)
		}
	}
}

// TestSandboxWrittenBadIndex: an index with a complete line that does not read
// refuses every program in a directory the user can write, naming the index and the
// fix (fail closed; a last line without its newline is an append under way:
// TestWrittenIndexPartialLine); one the
// user cannot write reads no index. A missing index (a data directory of an earlier
// devsandbox) is made good from the projects' records.
func TestSandboxWrittenBadIndex(t *testing.T) {
	f := newWrittenFixture(t)
	index := filepath.Join(f.data, WrittenIndex)
	if _, err := os.Stat(index); err != nil {
		t.Fatalf("RecordProject wrote no index: %v", err)
	}
	for name, content := range map[string]string{
		"cut short":     `project "/src/a` + "\n" + `project "/src/b"` + "\n",
		"unquoted":      "project /src/a\n",
		"relative":      `project "src/a"` + "\n",
		"unknown kind":  `exec "/src/a"` + "\n",
		"missing field": `bind "/src/a" "/src/b"` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(index, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			err := SandboxWritten(f.data, f.state, "bubblewrap", filepath.Join(f.local, "bwrap"))
			if err == nil || !errors.Is(err, ErrProtection) || !strings.Contains(err.Error(), index) || !strings.Contains(err.Error(), "remove it") {
				t.Errorf("SandboxWritten with a bad index = %v, want ErrProtection naming %s and the fix", err, index)
			}
		})
	}
	if err := os.Remove(index); err != nil {
		t.Fatal(err)
	}
	if err := SandboxWritten(f.data, f.state, "bubblewrap", filepath.Join(f.projA, ".venv", "bin", "bwrap")); err == nil || !strings.Contains(err.Error(), f.projA) {
		t.Errorf("SandboxWritten without an index = %v, want refused by A's record", err)
	}
	// The next new record makes the index again, A's record included.
	c := &Plan{Project: Project{Dir: filepath.Join(f.root, "src", "c")}, SandboxHome: filepath.Join(f.data, "c-9", "home")}
	RecordProject(c)
	got, err := os.ReadFile(index)
	if err != nil || !strings.Contains(string(got), projectLine(f.projA)) || !strings.Contains(string(got), projectLine(c.Project.Dir)) {
		t.Errorf("the index made again = %q, %v; want A's and C's projects", got, err)
	}
}

// TestRecordProjectWritesOnlyChanges: a launch with the project and binds of the
// last one appends nothing to the index.
func TestRecordProjectWritesOnlyChanges(t *testing.T) {
	f := newWrittenFixture(t)
	index := filepath.Join(f.data, WrittenIndex)
	before, _ := os.ReadFile(index)
	want := projectLine(f.projA) + bindLine(f.bound, f.projA, "sandbox.rw_binds")
	if string(before) != want {
		t.Fatalf("index after A's first launch:\n%s\nwant:\n%s", before, want)
	}
	RecordProject(f.a)
	if after, _ := os.ReadFile(index); string(after) != string(before) {
		t.Errorf("a second launch with the same binds changed the index:\n%s", after)
	}
}

// TestRecordProjectIndexFirst: a launch whose append to the index failed leaves its
// records unwritten, so the next launch appends again: a project recorded but missing
// from the index would be unknown to SandboxWritten for good.
func TestRecordProjectIndexFirst(t *testing.T) {
	f := newWrittenFixture(t)
	index := filepath.Join(f.data, WrittenIndex)
	if err := os.Remove(index); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(index, 0o700); err != nil { // the append fails
		t.Fatal(err)
	}
	c := &Plan{Project: Project{Dir: filepath.Join(f.root, "src", "c")}, SandboxHome: filepath.Join(f.data, "c-9", "home")}
	if err := os.MkdirAll(c.SandboxHome, 0o700); err != nil {
		t.Fatal(err)
	}
	RecordProject(c)
	if err := os.Remove(index); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(index, []byte(projectLine(f.projA)), 0o600); err != nil {
		t.Fatal(err)
	}
	RecordProject(c)
	if got, err := os.ReadFile(index); err != nil || !strings.Contains(string(got), projectLine(c.Project.Dir)) {
		t.Errorf("after a failed append, the next launch's index = %q, %v; want C's project", got, err)
	}
}
