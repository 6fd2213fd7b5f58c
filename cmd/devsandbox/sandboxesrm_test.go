package main

import (
	"path/filepath"
	"testing"
)

// A name `sandboxes rm` does not know is refused with where the names are.
func TestSandboxesRmUnknownNameSaysWhereNamesAre(t *testing.T) {
	home := t.TempDir()
	a, out, errb := testApp()
	a.environ = []string{"HOME=" + home, "XDG_RUNTIME_DIR=" + filepath.Join(home, "run"), "DOCKER_HOST=unix://" + filepath.Join(home, "no-engine.sock")}
	code := a.main([]string{"sandboxes", "rm", "nosuch"})
	want := "devsandbox: no sandbox named nosuch; `devsandbox sandboxes list` shows the names (a project's directory name and its id: myproject-1a2b3c4d)\n"
	if code != exitFailure || out.Len() != 0 || errb.String() != want {
		t.Errorf("exit %d, stdout %q, stderr\n%s\nwant 125 and\n%s", code, out, errb, want)
	}
}
