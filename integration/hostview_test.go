//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostView: system_binds = ["host"] (read-only /) launches on a host with a Docker
// socket where /var/run links to /run (Debian's layout), and keeps the view's
// guarantees: both names of the socket show the empty mask (nothing to connect to),
// the host home is replaced by the sandbox home, and devsandbox's own state, outside
// the home where the host root shows it, is masked. bubblewrap places a mount through
// the links above it, and an absolute one leads out of its new root: the launch
// failed with "Can't create file at /var/run/docker.sock" (exit 125). docker and krun
// take the system from the image and accept the setting (it changes nothing there).
func TestHostView(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		if iso == "bwrap" {
			fi, err := os.Stat("/run/docker.sock")
			link, lerr := os.Readlink("/var/run")
			if err != nil || fi.Mode()&os.ModeSocket == 0 || lerr != nil || link != "/run" {
				if os.Getenv("CI") != "" {
					t.Fatalf("the test needs the Docker socket at /run/docker.sock and /var/run -> /run (%v, %q %v)", err, link, lerr)
				}
				t.Skip("no Docker socket at /run/docker.sock behind /var/run -> /run")
			}
		}
		p := newProject(t)
		writeHome(t, ".ssh/id_ed25519", "PRIVATE-KEY-BAIT\n")
		// devsandbox's state outside the home, where the host root shows it.
		xdg, err := os.MkdirTemp("/var/tmp", "dsb-hostview-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(xdg) })
		state := filepath.Join(xdg, "state")
		bait := filepath.Join(state, "devsandbox", "bait")
		if err := os.MkdirAll(filepath.Dir(bait), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bait, []byte("STATE-BAIT\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{xdg, state, filepath.Dir(bait), bait} {
			if err := os.Chown(d, it.uid, it.gid); err != nil {
				t.Fatal(err)
			}
		}
		cfg := p.writeConfig(iso, "hostview.toml", "[sandbox]\nsystem_binds = [\"host\"]\n")
		script := `for s in /run/docker.sock /var/run/docker.sock; do
				if [ -S "$s" ]; then echo "$s: SOCKET"
				elif [ -f "$s" ] && [ ! -s "$s" ]; then echo "$s: empty"
				elif [ -e "$s" ]; then echo "$s: NOT EMPTY"
				else echo "$s: absent"; fi
				if command -v curl >/dev/null && curl -s --max-time 5 --unix-socket "$s" http://docker/_ping >/dev/null 2>&1; then echo "$s: CONNECTED"; fi
			done
			cat ~/.ssh/id_ed25519 ` + bait + ` 2>/dev/null
			ls -A ` + filepath.Dir(bait) + ` 2>/dev/null
			echo done`
		r := run(t, p.dir, []string{"XDG_STATE_HOME=" + state}, "", "--isolator="+iso, "--config", cfg, "--egress=none", "--", "/bin/sh", "-c", script)
		want := "/run/docker.sock: empty\n/var/run/docker.sock: empty\ndone\n"
		if iso != "bwrap" {
			// The image's system: the mask at /run, /var/run as the image has it.
			want = "/run/docker.sock: empty\n/var/run/docker.sock: "
			if strings.Contains(r.stdout, "/var/run/docker.sock: absent") {
				want += "absent\ndone\n"
			} else {
				want += "empty\ndone\n"
			}
		}
		if r.code != 0 || r.stdout != want {
			t.Fatalf("with system_binds = [\"host\"]: want exit 0 and\n%s\ngot:\n%s", want, r)
		}
	})
}

// TestSystemListThroughLinks: a system_binds list that binds /var shows the host's
// /var/run -> /run, and one that lists a path below a listed link (/lib ->
// usr/lib) would have bubblewrap make a directory where the link goes: both stopped
// the launch (125). The mask lands at the link's target, the path where the link
// leads, and both names of the socket show the empty mask. bwrap only: the list is
// bwrap's view (docker and krun take the system from the image).
func TestSystemListThroughLinks(t *testing.T) {
	forEachIsolatorOf(t, []string{"bwrap"}, func(t *testing.T, iso string) {
		if link, err := os.Readlink("/var/run"); err != nil || link != "/run" {
			if os.Getenv("CI") != "" {
				t.Fatalf("the test needs /var/run -> /run: %q %v", link, err)
			}
			t.Skip("/var/run is not a link to /run here")
		}
		if _, err := os.Stat("/run/docker.sock"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("the test needs the Docker socket at /run/docker.sock: %v", err)
			}
			t.Skip("no Docker socket at /run/docker.sock")
		}
		p := newProject(t)
		var list []string
		for _, d := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/var"} {
			if _, err := os.Lstat(d); err == nil {
				list = append(list, fmt.Sprintf("%q", d))
			}
		}
		if fi, err := os.Lstat("/lib"); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if ents, err := filepath.Glob("/lib/*-linux-gnu"); err == nil && len(ents) > 0 {
				list = append(list, fmt.Sprintf("%q", ents[0]))
			}
		}
		cfg := p.writeConfig(iso, "list.toml", "[sandbox]\nsystem_binds = ["+strings.Join(list, ", ")+"]\n")
		r := run(t, p.dir, nil, "", "--isolator="+iso, "--config", cfg, "--egress=none", "--", "/bin/sh", "-c",
			`for s in /run/docker.sock /var/run/docker.sock; do if [ -S "$s" ]; then echo "$s: SOCKET"; elif [ -f "$s" ] && [ ! -s "$s" ]; then echo "$s: empty"; else echo "$s: other"; fi; done`)
		want := "/run/docker.sock: empty\n/var/run/docker.sock: empty\n"
		if r.code != 0 || r.stdout != want {
			t.Fatalf("with system_binds = [%s]: want exit 0 and\n%s\ngot:\n%s", strings.Join(list, ", "), want, r)
		}
	})
}
