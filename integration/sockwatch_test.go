//go:build integration

package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHostViewSocketAfterLaunch: a host service whose socket is bound after the
// sandbox started (a service restarted, a new VM manager, the user's new ssh-agent)
// in a directory a widened view shows. The sandbox says READY and waits on its
// stdin; the host then binds the listener and releases it; the sandbox connects to
// the socket listed at launch (masked: refused) and to the new one. No sleep: the
// sandbox's READY line and the test's newline order the two sides.
//
// The new socket is a known gap (docs/security-model.md, "Not protected against"):
// the launch-time scan (/proc/net/unix) cannot know it, and on s28 the sandbox got
// its answer through the read-only view. No fix holds on the kernels devsandbox
// supports today (Landlock's LANDLOCK_ACCESS_FS_RESOLVE_UNIX needs ABI 9, Linux 7.1;
// a watcher masking new sockets in the running sandbox is a race that a spinning
// connect(2) won 18 and 60 times in 100). The test logs the gap while it stands and
// fails on any other outcome; "refused" is the outcome a fix must give.
func TestHostViewSocketAfterLaunch(t *testing.T) {
	isos := slices.DeleteFunc(isolators(), func(iso string) bool { return iso != "bwrap" && iso != localDocker })
	forEachIsolatorOf(t, isos, func(t *testing.T, iso string) {
		for _, tc := range []struct{ name, config string }{
			{"host view", "system_binds = [\"host\"]\n"},
			{"ro_binds of its directory", "ro_binds = [%q]\n"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if iso != "bwrap" && tc.name == "host view" {
					t.Skip("the host view is bwrap's: docker takes the system from the image")
				}
				p := newProject(t)
				dir := userDirIn(t, "/var/lib", "dsb-late-")
				// One socket there at launch: the directory is a listed socket's, the
				// case the launch-time scan handles best (its other sockets are read).
				answerOn(t, filepath.Join(dir, "early.sock"), "EARLY-ANSWERED")
				config := tc.config
				if config != "system_binds = [\"host\"]\n" {
					config = fmt.Sprintf(config, dir)
				}
				cfg := p.writeConfig(iso, "view.toml", "[sandbox]\n"+config)
				late := filepath.Join(dir, "late.sock")
				script := "echo READY; read go; " + unixConnectScript(filepath.Join(dir, "early.sock")) + "; " + unixConnectScript(late)
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
				defer cancel()
				cmd := command(ctx, p.dir, baseEnv(), "--isolator="+iso, "--config", cfg, "--egress=none", "--", "/bin/sh", "-c", script)
				lines, release := started(t, cmd)
				lines.waitForIn(90*time.Second, "READY")
				answerOn(t, late, "LATE-ANSWERED")
				release()
				early, got := lines.next(), lines.next()
				if err := cmd.Wait(); err != nil || early != "refused" {
					t.Fatalf("%s: want the socket bound before the launch refused, got %q (exit: %v)", config, early, err)
				}
				switch got {
				case "refused":
				case "LATE-ANSWERED":
					t.Logf("known gap: %s: %s bound after the launch answered the sandbox (docs/security-model.md, \"Not protected against\")", strings.TrimSpace(config), late)
				default:
					t.Fatalf("%s, %s bound after the launch: want \"refused\" (or the known gap's answer), got %q", config, late, got)
				}
			})
		}
	})
}
