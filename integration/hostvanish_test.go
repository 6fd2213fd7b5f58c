//go:build integration

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHostViewSocketVanishes: a host socket listed when the Plan is built and gone
// before the sandbox starts (a service stopping) leaves nothing to mask: the run
// goes ahead, and the socket still there stays masked. The embedding harness
// removes the socket between planner.Build and Run, so no timing is involved. On
// s27 bwrap could not create the mask's destination in the read-only view and the
// run stopped (125).
func TestHostViewSocketVanishes(t *testing.T) {
	isos := slices.DeleteFunc(embedIsolators(), func(iso string) bool { return iso != "bwrap" && iso != localDocker })
	forEachIsolatorOf(t, isos, func(t *testing.T, iso string) {
		for _, tc := range []struct{ name, config, shown string }{
			{"host view", "system_binds = [\"host\"]\n", ""},
			{"ro_binds of its directory", "ro_binds = [%q]\n", ""},
			{"its directory moved", "host_mounts = [\"%s:/mnt/dsb-vanish\"]\n", "/mnt/dsb-vanish"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if iso != "bwrap" && tc.config == "system_binds = [\"host\"]\n" {
					t.Skip("the host view is bwrap's: docker takes the system from the image")
				}
				p := newProject(t)
				dir := userDirIn(t, "/var/tmp", "dsb-vanish-")
				gone, stays := filepath.Join(dir, "gone.sock"), filepath.Join(dir, "stays.sock")
				answerOn(t, gone, "GONE-ANSWERED")
				answerOn(t, stays, "STAYS-ANSWERED")
				config := tc.config
				if config != "system_binds = [\"host\"]\n" {
					config = fmt.Sprintf(config, dir)
				}
				shown := dir
				if tc.shown != "" {
					shown = tc.shown
				}
				cfg := p.writeConfig(iso, "view.toml", "[sandbox]\n"+config)
				script := unixConnectScript(filepath.Join(shown, "gone.sock")) + "; " + unixConnectScript(filepath.Join(shown, "stays.sock"))
				e := startEmbed(t, embedJob{Iso: iso, Dirs: []string{p.dir}, Script: script, Egress: "none", Config: cfg, Unlink: gone}, p.root)
				outs, res := e.results(t, 2*time.Minute)
				if res[0] != "0 nil" || fmt.Sprint(outs[0]) != "[refused refused]" {
					t.Fatalf("%s, %s removed after the Plan was built: want the run to go ahead and both refused, got result %q, output %q\nharness stderr:\n%s", config, gone, res[0], outs[0], e.stderr.String())
				}
				// A mask's destination made in a read-write bind would be a file left on the host.
				if _, err := os.Lstat(gone); !os.IsNotExist(err) {
					t.Errorf("%s is back on the host after the run (%v): the vanished socket's mask made it", gone, err)
				}
			})
		}
	})
}

// TestHostViewSocketSecondPath: a masked socket reached by another path the view
// shows. /proc/net/unix names the path a socket was bound at; a socket renamed since
// (bound at a temporary name, then moved into place), a hard link made beside it,
// and its directory bind-mounted elsewhere on the host are reached by names it does
// not list; a symlink to the masked path resolves, in the sandbox, to the mask.
func TestHostViewSocketSecondPath(t *testing.T) {
	requireBwrap(t)
	dir := userDirIn(t, "/var/lib", "dsb-second-")
	sock := filepath.Join(dir, "x.sock")
	answerOn(t, sock, "SERVICE-ANSWERED")
	renamed := filepath.Join(dir, "renamed.sock")
	answerOn(t, renamed+".tmp", "RENAMED-ANSWERED")
	if err := os.Rename(renamed+".tmp", renamed); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(dir, "linked.sock")
	if err := os.Link(sock, linked); err != nil {
		t.Fatal(err)
	}
	links := userDirIn(t, "/var/tmp", "dsb-links-")
	symlink := filepath.Join(links, "sym.sock")
	if err := os.Symlink(sock, symlink); err != nil {
		t.Fatal(err)
	}
	paths := []string{renamed, linked, symlink}
	if os.Geteuid() == 0 {
		mnt, err := os.MkdirTemp("/mnt", "dsb-bound-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(mnt) })
		if out, err := exec.Command("mount", "--bind", dir, mnt).CombinedOutput(); err != nil {
			t.Fatalf("mount --bind %s %s: %v\n%s", dir, mnt, err, out)
		}
		t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
		paths = append(paths, filepath.Join(mnt, "x.sock"))
	} else {
		t.Log("not root: the bind mount of the socket's directory is not tried")
	}
	p := newProject(t)
	cfg := p.writeConfig("bwrap", "view.toml", "[sandbox]\nsystem_binds = [\"host\"]\n")
	// A hard link in another directory is found only by a walk: the run stops.
	t.Run("hard link elsewhere", func(t *testing.T) {
		_, other := serviceSocket(t, "/var/lib", "OTHER-ANSWERED")
		link := filepath.Join(links, "other.sock")
		if err := os.Link(other, link); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(link)
		r := run(t, p.dir, nil, "", "--isolator=bwrap", "--config", cfg, "--egress=none", "--", "/bin/sh", "-c", unixConnectScript(link))
		want := "devsandbox: protection could not be applied: the host socket " + other + " has 2 names (hard links)"
		if r.code != 125 || r.stdout != "" || !strings.HasPrefix(r.stderr, want) {
			t.Fatalf("host view, %s a hard link to %s: want 125 and %q, got:\n%s", link, other, want, r)
		}
	})
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			r := run(t, p.dir, nil, "", "--isolator=bwrap", "--config", cfg, "--egress=none", "--", "/bin/sh", "-c", unixConnectScript(path))
			if r.code != 0 || r.stdout != "refused\n" {
				t.Fatalf("host view, %s a second path to %s: want \"refused\", got:\n%s", path, sock, r)
			}
		})
	}
}

// userDirIn makes a fresh directory in parent owned by the test user, mode 0755
// (sockets in it are the host's; the test user may remove them).
func userDirIn(t *testing.T, parent, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	return dir
}
