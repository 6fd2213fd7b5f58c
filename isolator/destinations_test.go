package isolator_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// TestRecordProject: the project's directory is recorded beside the sandbox home,
// and recorded again when the same sandbox home now serves another path.
func TestRecordProject(t *testing.T) {
	base := filepath.Join(t.TempDir(), "proj-12345678")
	p := &isolator.Plan{SandboxHome: filepath.Join(base, "home"), Project: isolator.Project{Dir: "/src/proj"}}
	record := filepath.Join(base, "project")
	if err := os.MkdirAll(p.SandboxHome, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"/src/proj", "/src/proj", "/moved/proj"} {
		p.Project.Dir = dir
		isolator.RecordProject(p)
		b, err := os.ReadFile(record)
		if err != nil || string(b) != dir+"\n" {
			t.Fatalf("after recording %s: %q, %v", dir, b, err)
		}
		if fi, err := os.Stat(record); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, %v", record, fi.Mode(), err)
		}
	}
	// No sandbox home (a plan for a harness's own subprocesses): nothing is written.
	isolator.RecordProject(&isolator.Plan{Project: isolator.Project{Dir: "/src/proj"}})
}
