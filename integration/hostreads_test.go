//go:build integration

package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Guarantee 12, for what devsandbox itself reads or removes later: a sandboxed run
// may leave anything in the places it can write (the project, its /tmp), and the next
// launch, `sandboxes prune` or a later run's clean-up must not follow it.

// TestPlantedFilesDoNotHangNextLaunch: the project files the next launch reads that a
// sandbox may create (.devsandbox.toml and .miserc.toml, tripwires: reported, not
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
		for _, tc := range []struct{ name, plant string }{
			{"fifo", "mkfifo .miserc.toml"},
			{"link to /dev/zero", "ln -s /dev/zero .miserc.toml"},
		} {
			p.mustSandbox(iso, nil, tc.plant)
			// Once it is there the file is one host tools run, bound read-only: a link
			// there stops the launch, and so does a FIFO where the engine gets it as
			// content (docker); a FIFO bwrap binds as it is.
			file := filepath.Join(p.dir, ".miserc.toml")
			r := next()
			ran := r.code == 0 && strings.Contains(r.stdout, "RAN")
			stopped := r.code == 125 && !strings.Contains(r.stdout, "RAN") && strings.Contains(r.stderr, file)
			if !ran && !stopped {
				t.Errorf("%s planted as .miserc.toml: want the next launch to run, or to stop (125) naming the file:\n%s", tc.name, r)
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
