//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The last outputs that relayed names a sandbox chose raw: the egress proxy's audit
// file, the in-sandbox init's messages, and the image build's progress.

// TestProxyAuditFileEscapes: a sandbox chooses the host of a CONNECT and the path of
// a request; the proxy writes both to the audit file, which the user reads with a
// pager or cat as well as with devsandbox logs. The file must be valid JSON whose
// values are the sandbox's bytes, with no character a terminal acts on written raw
// (termsafe.JSON's rules: C1 controls, bidi overrides, zero-width characters as
// \uXXXX). Before, encoding/json left U+009B, U+202E and U+200B raw.
func TestProxyAuditFileEscapes(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		const host = "a\u202eb\u009b2K\u200bc.test"
		p.write("proj/connect.py", `import socket
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall("CONNECT `+host+`:443 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
print("connect", s.recv(12))
`)
		p.mustSandbox(iso, []string{"--egress=proxy", "--allow", o.addr + ":8080"},
			`python3 connect.py; curl -s -o /dev/null -m 5 'http://`+o.addr+`:8080/evil%E2%80%AEtxt.exe%C2%9B2K'`)
		files, _ := filepath.Glob(filepath.Join(it.home, ".local/state/devsandbox", p.name(), "proxy-log", "*.jsonl"))
		if len(files) == 0 {
			t.Fatalf("no audit file in the project's state")
		}
		var hosts, paths []string
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			assertNoControls(t, "the audit file "+filepath.Base(f), string(b))
			for line := range strings.Lines(string(b)) {
				var r struct{ Host, Path string }
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("the audit file holds a line that is not JSON (%v): %q", err, line)
				}
				hosts, paths = append(hosts, r.Host), append(paths, r.Path)
			}
		}
		if !slices.Contains(hosts, strings.ToLower(host)) { // the proxy records a host name in lower case
			t.Errorf("no record reads as the CONNECT's host %q: %q", host, hosts)
		}
		if !slices.ContainsFunc(paths, func(s string) bool { return strings.Contains(s, "evil") }) {
			t.Errorf("no record of the request's path: %q", paths)
		}
	})
}

// initHostile is a file name in the project, run as the command: the init names it
// when it cannot run it, before the command (which never starts) owns the terminal.
const initHostile = "n\x1b]0;owned\a\u009b2K\u202e\n" + forged

// TestInitMessagesEscapeNames: the in-sandbox init (bwrap's, docker's, krun's) says
// why a command did not start, naming it: a file of the project that is not
// executable, a name that is not there. Its message must show the name's escapes on
// its own line, never act on the terminal or forge a line. Before, the init printed
// the name raw.
func TestInitMessagesEscapeNames(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("proj/"+initHostile, "#!/bin/sh\necho ran\n") // mode 0644: not executable
		for _, c := range []struct {
			cmd  string
			code int
		}{{"./" + initHostile, 126}, {"./missing-" + initHostile, 127}} {
			r := run(t, p.dir, nil, "", "--isolator="+iso, "--", c.cmd)
			if r.code != c.code || strings.Contains(r.stdout, "ran") {
				t.Errorf("%q: want %d, the command not run\n%s", c.cmd, c.code, r)
			}
			assertNoControls(t, "the init's message", r.stderr)
			assertNoForgedLine(t, "the init's message", r.stderr)
			if want := `n\x1b]0;owned\x07\u009b2K\u202e\x0a` + forged; !strings.Contains(r.stderr, want) {
				t.Errorf("%q: no message shows %s:\n%s", c.cmd, want, r.stderr)
			}
		}
	})
}

// TestImageBuildEscapesProgress: `devsandbox image build` relays the engine's build
// stream, which holds what the base image's programs print (a base is anyone's
// image). An escape sequence or a forged line in it must show as its escapes. The
// base here prints them from the mkdir the Dockerfile runs. Before, the stream was
// relayed raw.
func TestImageBuildEscapesProgress(t *testing.T) {
	forEachIsolatorOf(t, []string{localDocker, remoteDocker}, func(t *testing.T, iso string) {
		requireEngine(t, iso)
		dir := t.TempDir()
		base, tag := "devsandbox-test/termlast-base:"+randHex(4), "devsandbox-test/termlast:"+randHex(4)
		t.Cleanup(func() { _ = dockerCmd(iso, "rmi", "-f", tag, base).Run() })
		df := "FROM devsandbox-test/busybox:1\n" +
			`RUN rm /bin/sh && printf '#!/bin/busybox sh\nprintf "m\\033]0;owned\\007\\302\\2332K\\342\\200\\256\\n` + forged + `\\n"\nexec /bin/busybox sh "$@"\n' > /bin/sh && /bin/busybox chmod 755 /bin/sh` + "\n"
		if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := dockerCmd(iso, "build", "-q", "-t", base, dir).CombinedOutput(); err != nil {
			t.Fatalf("building the base: %v\n%s", err, out)
		}
		r := run(t, it.home, []string{"DOCKER_HOST=" + engineOf(iso)}, "", "image", "build", "--base", base, "--tag", tag)
		if r.code != 0 {
			t.Fatalf("image build:\n%s", r)
		}
		assertNoControls(t, "image build", r.stdout+r.stderr)
		if want := `m\x1b]0;owned\x07\u009b2K\u202e`; !strings.Contains(r.stderr, want) {
			t.Errorf("the progress does not show %s:\n%s", want, r.stderr)
		}
	})
}
