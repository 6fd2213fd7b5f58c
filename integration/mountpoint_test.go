//go:build integration

package integration

import (
	"path/filepath"
	"testing"
)

// --mount SRC:/opt/NEW, a destination in a directory the view takes read-only from the
// host, where it does not exist: every isolator refuses it alike, before anything
// starts (the planner's rule, isolator.MountPointRule): bubblewrap cannot make that
// mount point, and docker and krun, which could, keep to the same rule. The message
// names the flag, the destination, the directory and what works. A destination that
// exists there, or one in a directory that can hold a new one (/srv), works
// everywhere.
func TestMountIntoSystemDirectory(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("data/f", "DATA\n")
		src := p.path("data")
		dst := "/opt/devsandbox-it-" + filepath.Base(p.root)
		r := p.sandbox(iso, []string{"--mount", src + ":" + dst + ":ro"}, "cat "+dst+"/f")
		want := "devsandbox: configuration does not fit this host: --mount (sandbox.host_mounts) " + src + ":" + dst +
			": the destination would be a new mount point in /opt (system directory, read-only in the sandbox), where " + dst +
			" does not exist; no isolator makes a mount point in a directory the sandbox sees read-only from the host (bubblewrap cannot, and docker and krun keep to the same rule); mount it where a new directory can be made (under /mnt, /srv, your home or the project) or create " +
			dst + " on the host first\n"
		if r.code != 125 || r.stderr != want || r.stdout != "" {
			t.Errorf("%s: want exit 125 and\n%s%s", dst, want, r)
		}
		for _, ok := range []string{"/srv/devsandbox-it", "/usr/share"} {
			if got := p.mustSandbox(iso, []string{"--mount", src + ":" + ok + ":ro"}, "cat "+ok+"/f"); got != "DATA\n" {
				t.Errorf("%s: %q", ok, got)
			}
		}
	})
}
