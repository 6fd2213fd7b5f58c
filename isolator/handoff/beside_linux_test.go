package handoff

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestBesideThroughSymlink: a program started through a symlinked directory finds
// the programs next to its real file, not next to the link (Linux resolves the
// executable's path itself), and a missing one is "".
func TestBesideThroughSymlink(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	real := filepath.Join(root, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, self, filepath.Join(real, "handoff.test"))
	if err := os.WriteFile(filepath.Join(real, "companion"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"companion": filepath.Join(real, "companion"), "missing": ""} {
		cmd := exec.Command(filepath.Join(root, "link", "handoff.test"))
		cmd.Env = []string{"HANDOFF_TEST=beside", "HANDOFF_BESIDE=" + name}
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != want {
			t.Errorf("Beside(%q) through %s = %q, want %q", name, filepath.Join(root, "link"), out, want)
		}
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
