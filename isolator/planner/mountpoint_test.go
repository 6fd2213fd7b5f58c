package planner

import (
	"errors"
	"testing"

	"github.com/devsandbox/devsandbox/config"
)

// A host mount whose destination would be a new mount point in a directory the view
// takes read-only from the host (/usr, /opt, a read-only bind) is refused by the
// planner, so every isolator refuses it alike: bubblewrap cannot make such a mount
// point, and docker and krun, which could in the container's own file system, are
// held to the same rule. An existing destination there, and any in a directory that
// can hold a new one (/mnt), pass.
func TestBuildMountPointRule(t *testing.T) {
	f := newFixture(t)
	mkdirs(t, f.root+"/data")
	const dst = "/usr/devsandbox-planner-test-absent"
	for _, ok := range []string{"/usr/share", "/mnt/x"} {
		cfg := f.load(t)
		cfg.Sandbox.HostMounts = []config.Mount{{Source: f.root + "/data", Dest: ok, ReadOnly: true}}
		if _, _, err := f.tryBuild(cfg); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	cfg := f.load(t)
	cfg.Sandbox.HostMounts = []config.Mount{{Source: f.root + "/data", Dest: dst, ReadOnly: true}}
	_, _, err := f.tryBuild(cfg)
	want := "configuration does not fit this host: --mount (sandbox.host_mounts) " + f.root + "/data:" + dst +
		": the destination would be a new mount point in /usr (system directory, read-only in the sandbox), where " + dst +
		" does not exist; no isolator makes a mount point in a directory the sandbox sees read-only from the host (bubblewrap cannot, and docker and krun keep to the same rule); mount it where a new directory can be made (under /mnt, /srv, your home or the project) or create " +
		dst + " on the host first"
	if !errors.Is(err, ErrConfig) || err.Error() != want {
		t.Errorf("Build:\n got %v\nwant %s", err, want)
	}
}
