//go:build integration

package integration

import (
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
