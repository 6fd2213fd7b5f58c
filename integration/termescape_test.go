//go:build integration

package integration

import (
	"os"
	"strings"
	"testing"
	"unicode"
)

// TestMessagesEscapeSandboxNames: names a sandbox chose (a directory holding a
// toolchain file, a nested repository, a second link to a masked file) reach the
// user's terminal in devsandbox's own messages, at the end of the run that made them
// and at the next launch, when devsandbox alone writes to the terminal, and in the
// script --dry-run prints. A name with an
// escape sequence in it (OSC 52 sets the clipboard, CSI erases the line that warns)
// must show as its escapes, never act on the terminal. Before, each was printed raw.
func TestMessagesEscapeSandboxNames(t *testing.T) {
	requireGit(t)
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		// The command's own output goes to /dev/null: what reaches stderr is devsandbox's.
		r := run(t, p.dir, gitEnv, "", "--isolator="+iso, "--", "/bin/sh", "-c", `exec >/dev/null 2>&1
			E=$(printf '\033') B=$(printf '\007')
			mkdir "t${E}]0;owned${B}" && echo '[toolchain]' > "t${E}]0;owned${B}/rust-toolchain.toml"
			mkdir "n${E}[2K" && cd "n${E}[2K" && git init -q && git config core.fsmonitor 'touch /tmp/x; false' && cd ..
			echo 'KEY=placeholder' > .env && ln .env "h${E}]52;c;b3duZWQ=${B}"
			true`)
		if r.code != 0 {
			t.Fatalf("the planting run failed:\n%s", r)
		}
		assertNoControls(t, "the planting run", r.stderr)
		// Each name is reported, its escapes shown.
		for _, want := range []string{`t\x1b]0;owned\x07/rust-toolchain.toml`, `n\x1b[2K/.git`} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("no message shows %s:\n%s", want, r.stderr)
			}
		}

		r = p.sandbox(iso, nil, "true")
		if r.code != 125 || !strings.Contains(r.stderr, "has 2 links") {
			t.Fatalf("the next launch did not refuse the linked .env:\n%s", r)
		}
		assertNoControls(t, "the next launch", r.stderr)
		if want := `h\x1b]52;c;b3duZWQ=\x07`; !strings.Contains(r.stderr, want) {
			t.Errorf("the refusal does not show %s:\n%s", want, r.stderr)
		}

		// --dry-run prints the protected toolchain file's path in its script and its
		// comments: the script spells the escape out for the shell.
		if err := os.Remove(p.path("proj/h\x1b]52;c;b3duZWQ=\a")); err != nil {
			t.Fatal(err)
		}
		r = run(t, p.dir, nil, "", "--isolator="+iso, "--dry-run", "--", "true")
		if r.code != 0 {
			t.Fatalf("--dry-run:\n%s", r)
		}
		assertNoControls(t, "--dry-run", r.stdout+r.stderr)
		if want := `/t'"$(printf '\033')"']0;owned'"$(printf '\007')"'/rust-toolchain.toml'`; !strings.Contains(r.stdout, want) {
			t.Errorf("--dry-run does not quote the toolchain file as %s:\n%s", want, r.stdout)
		}
	})
}

// assertNoControls fails when out holds a character a terminal acts on (C0 controls
// but newline and tab, DEL, C1 controls, bidi overrides and other format characters).
func assertNoControls(t *testing.T, what, out string) {
	t.Helper()
	for i, r := range out {
		if r == '\n' || r == '\t' {
			continue
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			line := out[strings.LastIndexByte(out[:i], '\n')+1:]
			if j := strings.IndexByte(line, '\n'); j >= 0 {
				line = line[:j]
			}
			t.Errorf("%s printed %U raw to the terminal, in: %q", what, r, line)
			return
		}
	}
}
