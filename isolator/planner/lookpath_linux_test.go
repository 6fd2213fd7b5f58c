package planner

import (
	"io/fs"
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
	symlink(t, b, a+"/alias") // b under a second name, as /bin is /usr/bin
	path := a + ":" + a + "/alias:" + b + ":" + a + "/none"
	t.Setenv("PATH", path)
	asked := map[string]int{}
	stat := func(p string) (fs.FileInfo, error) { asked[p]++; return os.Stat(p) }
	for _, name := range []string{"plain", "tool", "dir", "linked", "missing", "sh"} {
		_, err := exec.LookPath(name)
		if got := lookPath(path, name, stat); got != (err == nil) {
			t.Errorf("lookPath(%q) = %v, exec.LookPath: %v", name, got, err)
		}
	}
	if n := asked[b+"/missing"]; n != 0 {
		t.Errorf("%s searched again under its second name (%d stats)", b, n)
	}
	if n := asked[a+"/alias/missing"] + asked[a+"/none/missing"]; n != 2 {
		t.Errorf("asked %d times in the other entries, want once each", n)
	}
}
