package bwrap_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/bwrap"
)

// A command of a library session tries to move what the Plan protects under a name
// no mount covers: the directory holding a masked .env (a mount point cannot be
// renamed, EBUSY, but a directory above one can, and the mount moves with it in the
// sandbox's namespace while the host shows the secret under the new name), and the
// .git holding the read-only hooks. planner.Build anchors every directory on the way
// to a mask or a protected bind (binds it onto itself), so neither rename succeeds
// and there is nothing a View made later could miss. Were one moved (a Plan built
// otherwise: TestViewOpenMovedProtections), only a View made before knows the files:
// the session's View (Session.View) is made by Begin, before any command runs.
func TestSessionMovedProtections(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("bwrap is required in CI")
		}
		t.Skip("bwrap not installed")
	}
	p, proj := libraryPlanWith(t, func(proj string) {
		if err := os.MkdirAll(filepath.Join(proj, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proj, "sub", ".env"), []byte("SECRET=2\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	p.Self = ""
	p.Syscalls.Unfiltered = true
	p.Limits.Pids = 0
	s, err := bwrap.Begin(context.Background(), p, func(m string) { t.Log(m) })
	if err != nil {
		t.Fatal(err)
	}
	defer s.End()
	cmd, err := bwrap.Command(context.Background(), p, []string{"/bin/sh", "-c", "mv sub sub2 2>&1; mv .git .git2 2>&1; true"})
	if err != nil {
		t.Fatal(err)
	}
	cmd.Dir = proj
	out, err := cmd.CombinedOutput()
	t.Logf("the command: %v, %q", err, out)
	for _, moved := range []string{"sub2", ".git2"} {
		if _, err := os.Lstat(filepath.Join(proj, moved)); err == nil {
			t.Errorf("the command moved a protected directory to %s", moved)
		}
	}
	// Where it is, under either name, the session's View refuses the secret.
	for _, name := range []string{"sub/.env", "sub2/.env", ".env"} {
		f, err := s.View().Open(filepath.Join(proj, name), os.O_RDONLY, 0)
		if err == nil {
			f.Close()
		}
		if _, serr := os.Lstat(filepath.Join(proj, name)); serr == nil && !errors.Is(err, isolator.ErrMasked) {
			t.Errorf("the session's View: Open(%s) = %v, want ErrMasked", name, err)
		}
	}
}
