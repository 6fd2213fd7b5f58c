package isolator

import (
	"errors"
	"os"
	"path/filepath"
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
