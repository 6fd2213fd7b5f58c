//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Guarantee 12, for what devsandbox itself reads or removes later: a sandboxed run
// may leave anything in the places it can write (the project, its /tmp), and the next
// launch, `sandboxes prune` or a later run's clean-up must not follow it.

// TestPlantedFilesDoNotHangNextLaunch: the project files the next launch reads that a
// sandbox may create (.devsandbox.toml, .miserc.toml, yarn's rc files; tripwires: reported, not
// prevented) left as a FIFO or a symlink to /dev/zero. Before, the next launch blocked
// in open(2) on the FIFO for ever (SIGTERM did not end it), and read /dev/zero until
// the host ran out of memory (both, on bwrap and docker, for either name). Now a project
// file that is not a regular file stops the launch (125) naming it, and a .miserc.toml
// that is not one is not read (the mounts then decide: run, or stop naming it).
func TestPlantedFilesDoNotHangNextLaunch(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		// next runs the launch after the planting; a hang fails the test after 30 s.
		next := func() result {
			t.Helper()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			cmd := command(ctx, p.dir, baseEnv(), "--isolator="+iso, "--", "/bin/sh", "-c", "echo RAN")
			start := time.Now()
			r := runResult(t, cmd)
			if ctx.Err() != nil {
				t.Fatalf("the launch after the planting still ran after %v (killed):\n%s", time.Since(start), r)
			}
			return r
		}
		for _, tc := range []struct{ name, plant, kind string }{
			{"fifo", "mkfifo .devsandbox.toml", "a FIFO"},
			{"link to /dev/zero", "ln -s /dev/zero .devsandbox.toml", "a device"},
		} {
			p.mustSandbox(iso, nil, tc.plant)
			r := next()
			file := filepath.Join(p.dir, ".devsandbox.toml")
			if r.code != 125 || strings.Contains(r.stdout, "RAN") || !strings.Contains(r.stderr, file) || !strings.Contains(r.stderr, tc.kind) {
				t.Errorf("%s planted as .devsandbox.toml: want the next launch stopped (125) naming the file and %q:\n%s", tc.name, tc.kind, r)
			}
			if err := os.Remove(file); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct{ name, file, plant string }{
			{"fifo", ".miserc.toml", "mkfifo .miserc.toml"},
			{"link to /dev/zero", ".miserc.toml", "ln -s /dev/zero .miserc.toml"},
			// yarn's rc files are read for the release and plugins they name.
			{"fifo", ".yarnrc.yml", "mkfifo .yarnrc.yml"},
			{"link to /dev/zero", ".yarnrc", "ln -s /dev/zero .yarnrc"},
		} {
			p.mustSandbox(iso, nil, tc.plant)
			// Once it is there the file is one host tools run, bound read-only: a link
			// there stops the launch, and so does a FIFO where the engine gets it as
			// content (docker); a FIFO bwrap binds as it is.
			file := filepath.Join(p.dir, tc.file)
			r := next()
			ran := r.code == 0 && strings.Contains(r.stdout, "RAN")
			stopped := r.code == 125 && !strings.Contains(r.stdout, "RAN") && strings.Contains(r.stderr, file)
			if !ran && !stopped {
				t.Errorf("%s planted as %s: want the next launch to run, or to stop (125) naming the file:\n%s", tc.name, tc.file, r)
			}
			if err := os.Remove(file); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestOrphanTmpRemovalFollowsNoLink: a bwrap run killed with kill -9 leaves its session
// /tmp, holding what the sandbox planted there: symlinks (absolute, relative, in a 000
// directory) to a host directory, a FIFO. `sandboxes prune` (a minute later) and the
// next launch (CleanOrphans, 48 h later) remove the orphan; neither may follow a link
// into the host directory or block on the FIFO. TestRemovalFollowsNoLink covers the
// clean-up at the end of a run and `sandboxes rm`; this is the orphan path.
func TestOrphanTmpRemovalFollowsNoLink(t *testing.T) {
	requireBwrap(t)
	for _, how := range []string{"sandboxes prune", "next launch"} {
		t.Run(strings.ReplaceAll(how, " ", "-"), func(t *testing.T) {
			p := newProject(t)
			env := baseEnv(embedXDG(p.root)...)
			victim := p.path("victim")
			p.write("victim/keep.txt", "host\n")
			p.write("victim/sub/keep.txt", "host\n")
			plant := `mkdir -p /tmp/locked && ln -s ` + victim + ` /tmp/abs && ln -s ` + victim + `/sub /tmp/locked/in && ` +
				`ln -s ../../../../../../../../..` + victim + ` /tmp/rel && mkfifo /tmp/fifo && chmod 000 /tmp/locked`
			cmd := command(t.Context(), p.dir, env, "--isolator=bwrap", "--", "/bin/sh", "-c", plant+` && echo ready && exec sleep 1000`)
			lr := startLines(t, cmd)
			lr.waitFor("ready")
			for _, err := range kill9Outlived(t, cmd, descendants(cmd.Process.Pid)) {
				t.Errorf("a sandboxed process outlived devsandbox by 10s: %v", err)
			}
			base := filepath.Join(p.root, "state/devsandbox", p.name(), "tmp")
			ents, err := os.ReadDir(base)
			if err != nil || len(ents) != 1 {
				t.Fatalf("want the killed run's session /tmp in %s, have %v (%v)", base, ents, err)
			}
			orphan := filepath.Join(base, ents[0].Name())
			if _, err := os.Lstat(filepath.Join(orphan, "abs")); err != nil {
				t.Fatalf("the orphan does not hold what the sandbox planted: %v", err)
			}
			old := time.Now().Add(-49 * time.Hour) // older than both PruneAge and MaxAge
			if err := os.Chtimes(orphan, old, old); err != nil {
				t.Fatal(err)
			}
			var r result
			if how == "sandboxes prune" {
				ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
				defer cancel()
				prune := command(ctx, p.dir, append(env, "DOCKER_HOST=unix://"+p.path("no-docker.sock")),
					"--config", p.noPodmanConfig(), "sandboxes", "prune")
				r = runResult(t, prune)
				if !strings.Contains(r.stdout, "removed "+orphan) {
					t.Errorf("sandboxes prune did not report the orphan %s:\n%s", orphan, r)
				}
			} else {
				ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
				defer cancel()
				r = runResult(t, command(ctx, p.dir, env, "--isolator=bwrap", "--", "/bin/sh", "-c", "echo RAN"))
				if r.code != 0 || !strings.Contains(r.stdout, "RAN") {
					t.Errorf("the next launch:\n%s", r)
				}
			}
			if _, err := os.Lstat(orphan); !os.IsNotExist(err) {
				t.Errorf("%s left the orphan %s (%v):\n%s", how, orphan, err, r)
			}
			for _, f := range []string{"victim/keep.txt", "victim/sub/keep.txt"} {
				if b, err := os.ReadFile(p.path(f)); err != nil || string(b) != "host\n" {
					t.Errorf("after %s: %s is %q (%v)", how, p.path(f), b, err)
				}
			}
		})
	}
}

// TestPublishDirPlantsNotFollowed (bwrap, krun: the isolators that bind the host's
// publish directory; docker relays through its companion container on an engine
// volume, which the host does not follow): the session's publish directory is
// writable from inside (the init makes the ports' sockets there) and the host's relay
// dials into it for every connection to the published port. A sandbox that swaps its
// port's socket for a symlink to a host socket (here a listener of the test's; the
// Docker daemon's in an attack) must not have the relay connect there: the connection
// is dropped and the host socket sees nothing. What it leaves there (a directory it
// made unreadable) is gone with the session. The unit test TestDialPublishedRefusesLinks
// checks the dial alone.
func TestPublishDirPlantsNotFollowed(t *testing.T) {
	binders := slices.DeleteFunc(slices.Clone(isolators()), func(iso string) bool { return iso != "bwrap" && iso != "krun" })
	forEachIsolatorOf(t, binders, testPublishDirPlantsNotFollowed)
}

func testPublishDirPlantsNotFollowed(t *testing.T, iso string) {
	p := newProject(t)
	victimPath := p.path("victim.sock")
	victim, err := net.Listen("unix", victimPath)
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	if err := os.Chmod(victimPath, 0o666); err != nil { // the relay runs as the test user
		t.Fatal(err)
	}
	hostPort, sandboxPort := freePort(t), freePort(t)
	// Socket directories in /tmp (where the state path is too long for a socket's
	// name) are shared by every run of the user: only those this run made count.
	before := map[string]bool{}
	for _, d := range tmpPublishDirs() {
		before[d] = true
	}
	sock := fmt.Sprintf("/run/devsandbox/publish/%d.sock", sandboxPort)
	script := `test -S ` + sock + ` || { echo "no socket ` + sock + `"; exit 1; }; rm ` + sock + ` && ln -s ` + victimPath + ` ` + sock +
		` && mkdir /run/devsandbox/publish/locked && touch /run/devsandbox/publish/locked/f && chmod 000 /run/devsandbox/publish/locked && echo ready && cat >/dev/null`
	cmd := command(t.Context(), p.dir, baseEnv(), "--isolator="+iso, "--egress=none",
		"--publish", fmt.Sprintf("%d:%d", hostPort, sandboxPort), "--", "/bin/sh", "-c", script)
	stderr, stop := startReady(t, cmd)
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", hostPort), 10*time.Second)
	if err != nil {
		stop()
		t.Fatalf("the published port does not accept: %v\n%s", err, stderr)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	// The relay dials before it answers or hangs up: once the read ends, the dial
	// happened (or never will).
	n, rerr := c.Read(make([]byte, 64))
	c.Close()
	if n > 0 || errors.Is(rerr, os.ErrDeadlineExceeded) {
		t.Errorf("the published port answered (%d bytes, %v): want the connection dropped", n, rerr)
	}
	if connected(t, victim) {
		t.Errorf("the host's relay followed the planted link %s -> %s", sock, victimPath)
	}
	stop()
	// The host's publish directories of this project: none left.
	left, _ := filepath.Glob(filepath.Join(it.home, ".local/state/devsandbox", p.name(), "*", "publish-*"))
	for _, d := range tmpPublishDirs() {
		if !before[d] {
			left = append(left, d)
		}
	}
	for _, d := range left {
		if fi, err := os.Lstat(d); err == nil && fi.Sys().(*syscall.Stat_t).Uid == uint32(it.uid) {
			t.Errorf("the session left its publish directory %s", d)
		}
	}
}

// tmpPublishDirs lists the publish directories under the socket directories in /tmp.
func tmpPublishDirs() []string {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "*", "publish-*"))
	return dirs
}

// TestPublishDirSweptNotFollowed (bwrap): the publish directory of a run killed with
// kill -9 stays until a later launch sweeps it. The sweep asks each socket there
// whether it still accepts: a link the sandbox planted under a socket's name must not
// have it connect to the host socket it names (nor keep the directory), and a
// directory the sandbox made unreadable must not keep the directory on the host.
func TestPublishDirSweptNotFollowed(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	victimPath := p.path("victim.sock")
	victim, err := net.Listen("unix", victimPath)
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	if err := os.Chmod(victimPath, 0o666); err != nil {
		t.Fatal(err)
	}
	pub := "/run/devsandbox/publish"
	script := `ln -s ` + victimPath + ` ` + pub + `/1.sock && mkdir ` + pub + `/locked && touch ` + pub + `/locked/f && chmod 000 ` + pub + `/locked && echo ready && exec sleep 1000`
	cmd := command(t.Context(), p.dir, baseEnv(), "--isolator=bwrap", "--egress=none",
		"--publish", fmt.Sprintf("%d:%d", freePort(t), freePort(t)), "--", "/bin/sh", "-c", script)
	lr := startLines(t, cmd)
	lr.waitFor("ready")
	for _, err := range kill9Outlived(t, cmd, descendants(cmd.Process.Pid)) {
		t.Errorf("a sandboxed process outlived devsandbox by 10s: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(it.home, ".local/state/devsandbox", p.name(), "sock", "publish-*"))
	if len(left) != 1 {
		t.Fatalf("want the killed run's publish directory, have %v", left)
	}
	old := time.Now().Add(-2 * time.Minute) // the sweep leaves younger ones (a session starting)
	if err := os.Chtimes(left[0], old, old); err != nil {
		t.Fatal(err)
	}
	r := p.sandbox("bwrap", []string{"--egress=none", "--publish", fmt.Sprintf("%d:%d", freePort(t), freePort(t))}, "echo RAN")
	if r.code != 0 || !strings.Contains(r.stdout, "RAN") {
		t.Fatalf("the next launch:\n%s", r)
	}
	if connected(t, victim) {
		t.Errorf("the sweep connected to the host socket a planted link names (%s)", victimPath)
	}
	if _, err := os.Lstat(left[0]); !os.IsNotExist(err) {
		t.Errorf("the sweep left the killed run's publish directory %s (%v)", left[0], err)
	}
}

// connected reports whether a connection waits in ln's backlog, without waiting: an
// accept(2) on a non-blocking copy of its descriptor (a Go deadline already passed
// would fail the accept before trying it).
func connected(t *testing.T, ln net.Listener) bool {
	t.Helper()
	f, err := ln.(*net.UnixListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	nfd, _, err := syscall.Accept(fd)
	if err == nil {
		syscall.Close(nfd)
		return true
	}
	if err != syscall.EAGAIN {
		t.Fatalf("accept on the victim socket: %v", err)
	}
	return false
}

// TestOwnStateNeverExposed: devsandbox's own configuration, data and state (trust
// records, other projects' sandbox homes, the /etc snapshot, quarantine, audit logs,
// the proxy CA key) are what the host later trusts, loads and runs; a sandbox that
// could write trusted.toml could trust its own .devsandbox.toml. A user's bind of one
// of them, or of a path inside one, is refused (125); a bind of a directory above them
// shows them empty and read-only, and they cannot be renamed away. The test gives
// devsandbox XDG directories of its own: without the protection the sandbox renames
// and writes them (seen), and they must not be the test user's.
func TestOwnStateNeverExposed(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		xdg := p.path("xdg")
		env := []string{"XDG_CONFIG_HOME=" + xdg + "/config", "XDG_DATA_HOME=" + xdg + "/share", "XDG_STATE_HOME=" + xdg + "/state"}
		if iso == "krun" {
			// The moved XDG homes move rootless podman's storage too, where the image
			// is not: name the test user's (as TestPruneLockHoldsRunBack does).
			env = append(env, "XDG_RUNTIME_DIR="+runtimeDir(), "CONTAINERS_STORAGE_CONF="+userStorageConf(t))
		}
		userConfig, err := os.ReadFile(filepath.Join(it.home, ".config/devsandbox/config.toml"))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		p.write("xdg/config/devsandbox/config.toml", string(userConfig)) // the suite's settings (krun's runtime)
		sandbox := func(flags []string, script string) result {
			t.Helper()
			args := append(append([]string{"--isolator=" + iso}, flags...), "--", "/bin/sh", "-c", script)
			return run(t, p.dir, env, "", args...)
		}
		if r := sandbox(nil, "true"); r.code != 0 { // the project's state and home exist now
			t.Fatalf("first run:\n%s", r)
		}
		own := []string{
			xdg + "/config/devsandbox",
			xdg + "/state/devsandbox",
			filepath.Join(xdg, "state/devsandbox", p.name()),
			filepath.Join(xdg, "share/devsandbox", p.name(), "home"),
		}
		for _, src := range own {
			r := sandbox([]string{"--mount", src + ":/mnt/own"}, "echo RAN")
			if r.code != 125 || strings.Contains(r.stdout, "RAN") || !strings.Contains(r.stderr, "devsandbox's own configuration and state") {
				t.Errorf("--mount %s: want it refused (125):\n%s", src, r)
			}
		}
		// The directories above them inside the bind (state, share, config) must not
		// move either: renamed, with the mask riding along in the sandbox's namespace,
		// they leave their old names free for the sandbox to make a state directory of
		// its own that the next launch on the host would adopt (its session /tmp, the
		// mask scan's cache, the /etc snapshot). Through a bind shown elsewhere
		// (--mount SRC:DST) and at the same path (--mount SRC).
		for _, at := range []string{"/mnt/x", xdg} {
			script := `for d in ` + at + `/state/devsandbox ` + at + `/share/devsandbox ` + at + `/config/devsandbox; do
  [ -d "$d" ] || { echo "MISSING $d"; continue; }
  [ -z "$(ls -A "$d")" ] || echo "LISTED $d: $(ls -A "$d" | tr '\n' ' ')"
  touch "$d/x" 2>/dev/null && echo "WROTE $d"
  mv "$d" "$d.moved" 2>/dev/null && echo "RENAMED $d"
  p=$(dirname "$d")
  mv "$p" "$p.moved" 2>/dev/null && echo "RENAMED $p" && mkdir -p "$d" && echo PLANTED > "$d/PLANTED"
done
echo DONE`
			mount := xdg + ":" + at
			if at == xdg {
				mount = xdg
			}
			r := sandbox([]string{"--mount", mount}, script)
			if refusesAnchors(iso) {
				// The directory above the mask is anchored, a read-write bind the
				// engine cannot pin.
				wantAnchorsRefused(t, r)
				continue
			}
			if r.code != 0 || strings.TrimSpace(r.stdout) != "DONE" {
				t.Errorf("devsandbox's own directories through a bind of their parent's parent (--mount %s):\n%s", mount, r)
			}
			for _, d := range []string{"state", "share", "config"} {
				if _, err := os.Stat(filepath.Join(xdg, d+".moved")); err == nil {
					t.Fatalf("--mount %s: the sandbox renamed %s on the host", mount, filepath.Join(xdg, d))
				}
			}
		}
	})
}

// TestHostRunFileHardlinked: a file host tools run is read-only in the sandbox under
// its own name, and a sandbox cannot link it later (EXDEV across mounts); but one that
// a run created as a hard link of a file it keeps writing (reported then as created,
// and looking harmless when you review it) would be rewritten through the other name
// in the next run, unseen. The next launch stops (125) naming the other link, at the
// top of the project (.vscode/tasks.json) and in a sub-directory
// (sub/rust-toolchain.toml), and the file keeps what you reviewed.
func TestHostRunFileHardlinked(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		for _, tc := range []struct{ file, other string }{
			{".vscode/tasks.json", "notes.txt"},
			{"sub/rust-toolchain.toml", "sub/notes.txt"},
		} {
			p := newProject(t)
			p.mustSandbox(iso, nil, `mkdir -p $(dirname `+tc.file+`) && echo reviewed > `+tc.other+` && ln `+tc.other+` `+tc.file)
			r := p.sandbox(iso, nil, `echo EVIL > `+tc.other+`; echo RAN`)
			if b, err := os.ReadFile(filepath.Join(p.dir, tc.file)); err != nil || string(b) != "reviewed\n" {
				t.Errorf("%s after the next run: %q (%v)", tc.file, b, err)
			}
			if r.code != 125 || strings.Contains(r.stdout, "RAN") || !strings.Contains(r.stderr, filepath.Join(p.dir, tc.other)) {
				t.Errorf("%s linked as %s: want the next launch stopped (125) naming the other link:\n%s", tc.file, tc.other, r)
			}
		}
	})
}
