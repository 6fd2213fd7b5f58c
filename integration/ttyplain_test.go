//go:build integration

package integration

import (
	"bytes"
	"testing"
)

// Guarantee 12 when the output reaches the user's terminal but stdin is not one
// (`devsandbox -- cmd <file`, an agent's one-shot mode fed by a pipe): docker and
// krun copy the container's stdout and stderr themselves, and each must be
// filtered as the relayed terminal is. bwrap hands the host's descriptors to the
// command (docs/security-model.md, "The relayed terminal"), so it is not run here.
func TestPlainTerminalFiltered(t *testing.T) {
	// ZWNobyBwd25lZAo= is "echo pwned\n"; \235 and \234 are the 8-bit OSC and ST.
	const attack = `\033]52;c;ZWNobyBwd25lZAo=\007\033[21t\23552;c;ZWNobyBwd25lZAo=\234\033]0;kept-title\007\033[1mkept-bold\033[m`
	const script = `printf '` + attack + `out\n'; printf '` + attack + `err\n' >&2; echo done`
	var isos []string
	for _, iso := range isolators() {
		if iso != "bwrap" {
			isos = append(isos, iso)
		}
	}
	forEachIsolatorOf(t, isos, func(t *testing.T, iso string) {
		p := newProject(t)
		out := terminalOutput(t, p.dir, false, "--isolator="+iso, "--", "/bin/sh", "-c", script)
		for _, bad := range []string{"52;c;", "\x1b[21t"} {
			if bytes.Contains(out, []byte(bad)) {
				t.Errorf("the host terminal received %q; output %q", bad, out)
			}
		}
		for _, want := range []string{"\x1b]0;kept-title\x07\x1b[1mkept-bold\x1b[mout", "\x1b]0;kept-title\x07\x1b[1mkept-bold\x1b[merr", "done"} {
			if !bytes.Contains(out, []byte(want)) {
				t.Errorf("the host terminal did not receive %q; output %q", want, out)
			}
		}

		optIn := "--config=" + p.writeConfig(iso, "clipboard.toml", "[sandbox]\nterminal_clipboard = true\n")
		out = terminalOutput(t, p.dir, false, "--isolator="+iso, optIn, "--", "/bin/sh", "-c", script)
		if n := bytes.Count(out, []byte("\x1b]52;c;ZWNobyBwd25lZAo=\x07")); n != 2 {
			t.Errorf("with terminal_clipboard, the host terminal received the clipboard write %d times, want 2 (stdout, stderr); output %q", n, out)
		}
		if bytes.Contains(out, []byte("\x1b[21t")) {
			t.Errorf("with terminal_clipboard, the host terminal received CSI 21 t; output %q", out)
		}
	})
}

// TestPlainPipeUnchanged: output to a pipe or a file is the command's bytes, escape
// sequences and all (binary output, `cat image.png > file`), on every isolator.
func TestPlainPipeUnchanged(t *testing.T) {
	blob := []byte("\x1b]52;c;ZWNobyBwd25lZAo=\x07\x1b[21t\x9d52;c;x\x9c\x1bP$q m\x1b\\\x00\x01\xff\xfe\xc2\x9b21t\x1b")
	for i := range 256 {
		blob = append(blob, byte(i))
	}
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("proj/blob.bin", string(blob))
		r := run(t, p.dir, nil, "", "--isolator="+iso, "--", "/bin/sh", "-c", "cat blob.bin; cat blob.bin >&2")
		if r.code != 0 {
			t.Fatalf("%s", r)
		}
		if r.stdout != string(blob) {
			t.Errorf("stdout to a pipe changed: got %q, want %q", r.stdout, blob)
		}
		if !bytes.Contains([]byte(r.stderr), blob) {
			t.Errorf("stderr to a pipe does not hold the blob unchanged: got %q", r.stderr)
		}
	})
}
