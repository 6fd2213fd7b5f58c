//go:build integration

package integration

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// pagerSetup makes, in the session /tmp, a git repository of 100 commits whose
// subjects are m1: to m100: and a file of the numbers 1 to 500: more than the
// test terminal's 30 rows of each, so a pager stops after its first screen and
// waits for a key.
const pagerSetup = `set -e
cd /tmp; seq 1 500 > nums; git init -q -b main r; cd r
i=0; while [ $i -lt 100 ]; do i=$((i+1)); printf 'commit refs/heads/main\ncommitter t <t@t> %d +0000\ndata <<E\nm%d:\nE\n' $((1700000000+i)) $i; done | git fast-import --quiet
set +e
`

// pagerLimit is how long a run in TestPlainTerminalPager may take before it counts
// as waiting for keys: a run of a few seconds on a loaded machine, several times over.
const pagerLimit = 40 * time.Second

// TestPlainTerminalPager: under bwrap, a run whose output is the user's terminal but
// whose input is not (`echo x | devsandbox -- git log`, an agent's one-shot mode)
// gives the command a pty of its own for its output. A pager the command starts
// reads its keys from there (it has no /dev/tty): no key ever comes, so it must
// end by itself rather than wait. The run is given pagerLimit to exit on its own.
//   - git's pager, by default (PAGER=cat where none is set): the whole log, exit 0;
//   - a pager the user chose (core.pager=less) and less run directly: the first
//     screen, then the pager ends (its read of a key fails at once);
//   - Ctrl-C (SIGINT to devsandbox) ends a pager that waits on something else
//     (less +F, following a file) and util-linux more, as it ends other runs;
//   - the command cannot reopen its terminal for reading (less opens the terminal
//     bwrap names /dev/console), and after turning read permission back on it
//     reads nothing of what the user typed: the pty is the sandbox's, not the host's.
//
// docker and krun give the command pipes in such a run: git log starts no pager and
// writes the whole log there too.
func TestPlainTerminalPager(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		within := func(t *testing.T, typed, signalAt, script string, flags ...string) plainResult {
			t.Helper()
			args := append(append([]string{"--isolator=" + iso}, flags...), "--", "/bin/sh", "-c", pagerSetup+script)
			r := plainTerminalWithin(t, pagerLimit, p.dir, typed, signalAt, args...)
			if r.deadline {
				t.Fatalf("the run did not end within %s (waiting for keys that never come), killed: exit %d; output %q", pagerLimit, r.code, tail(r.out))
			}
			return r
		}
		t.Run("git log", func(t *testing.T) {
			r := within(t, "", "", `echo "PAGER=${PAGER-unset}"; git log --format=%s`)
			if r.code != 0 {
				t.Errorf("exit %d, want 0; output %q", r.code, tail(r.out))
			}
			pager := "PAGER=cat"
			if iso != "bwrap" {
				pager = "PAGER=unset" // stdout is a pipe there: git starts no pager
			}
			for _, want := range []string{pager, "m100:", "m50:", "m1:"} {
				if !bytes.Contains(r.out, []byte(want)) {
					t.Errorf("the terminal did not receive %q; output %q", want, tail(r.out))
				}
			}
		})
		if iso != "bwrap" {
			return // the rest runs less and more, which the test image lacks, on bwrap's pty
		}
		t.Run("PAGER set by the user", func(t *testing.T) {
			r := within(t, "", "", `echo "PAGER=${PAGER-unset}"`, "-e", "PAGER=more")
			if r.code != 0 || !bytes.Contains(r.out, []byte("PAGER=more")) {
				t.Errorf("exit %d, want 0 and the user's PAGER=more; output %q", r.code, tail(r.out))
			}
		})
		t.Run("core.pager less", func(t *testing.T) {
			r := within(t, "", "", `git -c core.pager=less log --format=%s; echo "git-exit=$?"`)
			for _, want := range []string{"m100:", "m80:", "git-exit="} {
				if !bytes.Contains(r.out, []byte(want)) {
					t.Errorf("the terminal did not receive %q; output %q", want, tail(r.out))
				}
			}
			// git's status is 0, or 141 (SIGPIPE) when less ended before git had
			// written all of the log, as when a user quits less early (once in CI,
			// at load); the run ending by itself is what is tested.
			if !bytes.Contains(r.out, []byte("git-exit=0")) && !bytes.Contains(r.out, []byte("git-exit=141")) {
				t.Errorf("git ended with neither 0 nor SIGPIPE's 141; output %q", tail(r.out))
			}
		})
		t.Run("less", func(t *testing.T) {
			r := within(t, "", "", `less /tmp/nums; echo "less-exit=$?"`)
			for _, want := range []string{"\n2\r", "\n29\r", "less-exit="} {
				if !bytes.Contains(r.out, []byte(want)) {
					t.Errorf("the terminal did not receive %q; output %q", want, tail(r.out))
				}
			}
		})
		// The pager is the command (exec): a shell would die of the SIGINT itself
		// and take the sandbox down with it, whatever the pager does.
		t.Run("Ctrl-C ends less +F", func(t *testing.T) {
			r := within(t, "", "Waiting for data", `exec less +F /tmp/nums`)
			t.Logf("less +F ended after SIGINT with exit %d", r.code)
		})
		t.Run("Ctrl-C ends more", func(t *testing.T) {
			r := within(t, "", "--More--", `exec more /tmp/nums`)
			t.Logf("more ended after SIGINT with exit %d", r.code)
		})
		t.Run("reopen", func(t *testing.T) {
			const probe = `python3 -c '
import os
def read(name):
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as e:
        return "refused-" + (os.strerror(e.errno) if e.errno else "?")
    try:
        return "read[" + os.read(fd, 64).decode(errors="replace") + "]"
    except OSError as e:
        return "nothing-" + os.strerror(e.errno)
for name in ("/proc/self/fd/1", "/dev/console"):
    print(name, read(name))
os.fchmod(1, 0o600)
print("after chmod", read("/proc/self/fd/1"))
'`
			r := within(t, "secret\n", "", probe)
			if r.code != 0 {
				t.Fatalf("exit %d; output %q", r.code, r.out)
			}
			out := string(r.out)
			for _, want := range []string{"/proc/self/fd/1 refused-", "after chmod nothing-"} {
				if !strings.Contains(out, want) {
					t.Errorf("the terminal did not receive %q; output %q", want, out)
				}
			}
			if strings.Contains(out, "/dev/console read[") {
				t.Errorf("the command opened /dev/console for reading; output %q", out)
			}
			if strings.Contains(out, "read[secret") {
				t.Errorf("the command read what the user typed at the host terminal; output %q", out)
			}
		})
	})
}
