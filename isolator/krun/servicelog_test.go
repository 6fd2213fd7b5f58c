package krun

import (
	"os"
	"path/filepath"
	"testing"
)

// TestServiceLogFollowsNoLink: the service's files lie in podman's runtime directory
// ($XDG_RUNTIME_DIR/podman), which a sandbox can write when your configuration binds
// the runtime directory (or a parent) read-write. A link planted at the log's name made
// the next service start truncate the file it names and write podman's output there
// (shown end to end with `--isolator krun`: a file holding "precious" then held
// podman's log line). A hard link of the file there, on the same file system, did the
// same. The log is now made anew, never opened through a name the sandbox left.
func TestServiceLogFollowsNoLink(t *testing.T) {
	for _, plant := range []struct {
		name string
		do   func(victim, at string) error
	}{
		{"symlink", os.Symlink},
		{"hard link", os.Link},
	} {
		t.Run(plant.name, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(dir, "victim")
			if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			log := serviceLog(filepath.Join(dir, "podman", "devsandbox-krun.sock"))
			if err := os.MkdirAll(filepath.Dir(log), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := plant.do(victim, log); err != nil {
				t.Fatal(err)
			}
			f, err := openServiceLog(log)
			if err != nil {
				t.Fatalf("openServiceLog with a %s planted: %v; want a fresh log", plant.name, err)
			}
			_, _ = f.WriteString("podman says\n")
			f.Close()
			if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
				t.Errorf("a %s planted at the service log's name: the file it names now holds %q", plant.name, b)
			}
			fi, err := os.Lstat(log)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
				t.Errorf("the log: %v, %v; want a regular file, 0600", fi, err)
			}
			if b, _ := os.ReadFile(log); string(b) != "podman says\n" {
				t.Errorf("the log holds %q", b)
			}
		})
	}
}
