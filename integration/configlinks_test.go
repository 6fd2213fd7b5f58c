//go:build integration

package integration

import (
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestConfigFileLinkedIntoProject: the --config trust check decides by path whether
// the sandbox can write the file, and a path is not all of a file. A --config file
// outside the project with another name inside it (a hard link), one bound onto its
// path from the project (a file mount point), and one in a directory bound from the
// project were each rewritten by a run's sandbox through the project, and the next
// `devsandbox --config FILE` applied the sandbox's content as the user's own (it bound
// a host directory the sandbox could not see, and printed its secret). Each now needs
// `devsandbox config trust FILE` (125 until then), and the message says why.
func TestConfigFileLinkedIntoProject(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		t.Cleanup(func() { os.Remove(it.home + "/.config/devsandbox/trusted.toml") })
		p.write("outside/secret", "HOSTSECRET\n")
		read := "cat " + p.path("outside/secret")
		const benign = "[env]\nset = { FROM_FILE = \"one\" }\n"
		evil := "[sandbox]\nro_binds = [\"" + p.path("outside") + "\"]\n"
		p.writeConfig(iso, "proj/evil.src", evil)
		bind := func(src, dst string) {
			t.Helper()
			if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
				t.Fatalf("bind %s on %s: %v", src, dst, err)
			}
			t.Cleanup(func() {
				if err := syscall.Unmount(dst, syscall.MNT_DETACH); err != nil {
					t.Errorf("unmount %s: %v", dst, err)
				}
			})
		}

		// A hard link: cfg/dev.toml outside the project, proj/linked.toml inside.
		hard := p.writeConfig(iso, "cfg/dev.toml", benign)
		if err := os.Link(hard, p.path("proj/linked.toml")); err != nil {
			t.Fatal(err)
		}
		// A file mount point: proj/bound.src bound onto cfg/bound.toml.
		p.writeConfig(iso, "proj/bound.src", benign)
		p.write("cfg/bound.toml", "")
		bind(p.path("proj/bound.src"), p.path("cfg/bound.toml"))
		// A directory mount point: proj/confdir bound onto cfgdir.
		p.writeConfig(iso, "proj/confdir/dev.toml", benign)
		p.mkdir("cfgdir")
		bind(p.path("proj/confdir"), p.path("cfgdir"))

		// The plant: an ordinary run rewrites the three through the project, in place.
		p.mustSandbox(iso, nil, "cat evil.src > linked.toml && cat evil.src > bound.src && cat evil.src > confdir/dev.toml")
		for _, tc := range []struct{ file, why string }{
			{hard, "it is hard-linked (2 names)"},
			{p.path("cfg/bound.toml"), "it is a mount point"},
			{p.path("cfgdir/dev.toml"), "it is also " + p.path("proj/confdir/dev.toml") + " (a mount shows " + p.path("proj/confdir") + " at " + p.path("cfgdir") + "): it lies in " + p.dir},
		} {
			r := p.sandbox(iso, []string{"--config", tc.file}, read)
			if strings.Contains(r.stdout, "HOSTSECRET") || r.code != 125 || !strings.Contains(r.stderr, tc.why) || !strings.Contains(r.stderr, "devsandbox config trust "+tc.file) {
				t.Errorf("a --config file the sandbox rewrote through the project (%s): want the run stopped (125) saying %q and how to trust it:\n%s", tc.file, tc.why, r)
			}
		}
		// Reviewed and trusted, the hard-linked file applies.
		if r := run(t, p.dir, nil, "", "config", "trust", hard); r.code != 0 {
			t.Fatalf("config trust %s:\n%s", hard, r)
		}
		if r := p.sandbox(iso, []string{"--config", hard}, read); r.code != 0 || r.stdout != "HOSTSECRET\n" {
			t.Errorf("the trusted hard-linked --config file not applied:\n%s", r)
		}
	})
}
