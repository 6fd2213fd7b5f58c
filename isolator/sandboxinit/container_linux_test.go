package sandboxinit

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// A check that fails (a mask the engine left with content; for a test process also its
// privileges) ends the container init with 125 before the command starts.
func TestContainerInitChecksBeforeCommand(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	if err := os.WriteFile(full, []byte("TOKEN=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	t.Setenv(wire.ManifestEnv, (&wire.Manifest{Checks: []wire.Check{{Kind: wire.CheckMaskFile, Path: full}}}).Encode())
	var stderr bytes.Buffer
	if code := ContainerMain([]string{"--", "/bin/sh", "-c", "touch " + marker}, &stderr); code != ExitSetupFailed {
		t.Errorf("exit %d, want %d; stderr %q", code, ExitSetupFailed, stderr.String())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran although a check failed")
	}
}
