package planner

import (
	"os"
	"os/exec"
	"testing"
)

// lookPath finds what exec.LookPath finds on the same search path: the first entry
// that is no directory and may be executed.
func TestLookPathMatchesExec(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	writeFile(t, a+"/plain", "")
	writeFile(t, b+"/plain", "#!/bin/sh\n")
	mkdirs(t, a+"/dir")
	for _, f := range []string{b + "/plain", b + "/tool"} {
		writeFile(t, f, "#!/bin/sh\n")
		if err := os.Chmod(f, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	symlink(t, b+"/tool", a+"/linked")
	path := a + ":" + b
	t.Setenv("PATH", path)
	for _, name := range []string{"plain", "tool", "dir", "linked", "missing", "sh"} {
		_, err := exec.LookPath(name)
		if got := lookPath(path, name, os.Stat); got != (err == nil) {
			t.Errorf("lookPath(%q) = %v, exec.LookPath: %v", name, got, err)
		}
	}
}
