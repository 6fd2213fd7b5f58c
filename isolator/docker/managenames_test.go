package docker

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Only the projects' directories of the data and state roots are sandboxes:
// devsandbox's own directories there, dashed names included (image-use,
// krun-image-env), are not listed, so `sandboxes rm` cannot be pointed at them.
func TestSandboxesListsOnlyProjectDirs(t *testing.T) {
	root := t.TempDir()
	d := Dirs{Data: filepath.Join(root, "data"), State: filepath.Join(root, "state"), UID: os.Getuid()}
	for _, p := range []string{
		"data/app-1a2b3c4d/home", "data/my-web-app-0123abcd/home",
		"state/app-1a2b3c4d/tmp", "state/image-use", "state/krun-image-env", "state/prestart", "state/locks",
		"state/etc/x", "state/not-a-project", "state/upper-1A2B3C4D", "state/short-1a2b3c",
	} {
		if err := os.MkdirAll(filepath.Join(root, p), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	b := &Isolator{HostAddr: "unix://" + filepath.Join(root, "no-engine.sock")}
	list, _ := b.Sandboxes(context.Background(), d) // no engine: the host side alone
	var names []string
	for _, s := range list {
		names = append(names, s.Name)
	}
	if want := []string{"app-1a2b3c4d", "my-web-app-0123abcd"}; len(names) != len(want) || names[0] != want[0] || names[1] != want[1] {
		t.Errorf("sandboxes %q, want %q", names, want)
	}
}
