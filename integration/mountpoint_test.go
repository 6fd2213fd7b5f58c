//go:build integration

package integration

import (
	"path/filepath"
	"strings"
	"testing"
)

// --mount SRC:/opt/NEW, a destination in a directory bwrap's view binds read-only
// from the host, where it does not exist: docker and krun make the mount point in
// the container; bwrap cannot, and devsandbox says so before bubblewrap starts —
// the flag, the destination, why, and what works — instead of bwrap's own message.
// A destination that exists there, or one in a directory of bwrap's fresh root
// (/srv), works everywhere.
func TestMountIntoSystemDirectory(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("data/f", "DATA\n")
		src := p.path("data")
		dst := "/opt/devsandbox-it-" + filepath.Base(p.root)
		r := p.sandbox(iso, []string{"--mount", src + ":" + dst + ":ro"}, "cat "+dst+"/f")
		if iso != "bwrap" {
			if r.code != 0 || r.stdout != "DATA\n" {
				t.Errorf("%s:\n%s", dst, r)
			}
		} else {
			want := "devsandbox: configuration does not fit this host: --mount (sandbox.host_mounts) " + src + ":" + dst +
				": the destination would be a new mount point in /opt (system directory, read-only in the sandbox), where " + dst +
				" does not exist, and bubblewrap cannot create one in a read-only directory; mount it where a new directory can be made (under /mnt, /srv, your home or the project) or create " +
				dst + " on the host first (docker and krun make it in the container)\n"
			if r.code != 125 || r.stderr != want || strings.Contains(r.stderr, "bwrap:") {
				t.Errorf("%s: want exit 125 and\n%s%s", dst, want, r)
			}
		}
		for _, ok := range []string{"/srv/devsandbox-it", "/usr/share"} {
			if got := p.mustSandbox(iso, []string{"--mount", src + ":" + ok + ":ro"}, "cat "+ok+"/f"); got != "DATA\n" {
				t.Errorf("%s: %q", ok, got)
			}
		}
	})
}
