//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// oneStreamScript alternates large writes on stdout and stderr, then short lines:
// round i writes 256 KiB of one letter on stdout, then 256 KiB of the next on
// stderr, then 8 pairs of lines, one on each. Every piece has bytes of its own, so a
// piece that overtook another shows. want is what it writes to one file, wantOut and
// wantErr what it writes to each of two.
func oneStreamScript() (script string, want, wantOut, wantErr []byte) {
	const rounds, size = 6, 256 << 10
	var s strings.Builder
	var w, wo, we bytes.Buffer
	for i := range rounds {
		o, e := bytes.Repeat([]byte{byte('a' + 2*i)}, size), bytes.Repeat([]byte{byte('b' + 2*i)}, size)
		fmt.Fprintf(&s, "head -c %d /dev/zero | tr '\\0' %c; head -c %d /dev/zero | tr '\\0' %c >&2; ", size, o[0], size, e[0])
		w.Write(o)
		w.Write(e)
		wo.Write(o)
		we.Write(e)
		for j := range 8 {
			fmt.Fprintf(&s, "echo out%d.%d; echo err%d.%d >&2; ", i, j, i, j)
			fmt.Fprintf(&w, "out%d.%d\nerr%d.%d\n", i, j, i, j)
			fmt.Fprintf(&wo, "out%d.%d\n", i, j)
			fmt.Fprintf(&we, "err%d.%d\n", i, j)
		}
	}
	s.WriteString("exit 3")
	return s.String(), w.Bytes(), wo.Bytes(), we.Bytes()
}

// TestOneFileKeepsOrder: when devsandbox's stdout and stderr are one open file
// (`devsandbox -- make >build.log 2>&1`), the file holds what the command wrote in
// the order it wrote it, byte for byte what the same script writes outside a
// sandbox. docker and krun copy a container's stdout and stderr apart (the engine
// does not keep the order between them), so the sandbox's init gives the command one
// pipe for both; bwrap gives the command the file itself. With two files, each gets
// its own stream, whole. The exit status is the command's either way. On docker
// engines both a one-shot run and a kept container's session (an exec).
func TestOneFileKeepsOrder(t *testing.T) {
	script, want, wantOut, wantErr := oneStreamScript()
	f, err := os.Create(filepath.Join(t.TempDir(), "outside.log"))
	if err != nil {
		t.Fatal(err)
	}
	sh := exec.Command("/bin/sh", "-c", script)
	sh.Stdout, sh.Stderr = f, f
	if err := sh.Run(); sh.ProcessState == nil || sh.ProcessState.ExitCode() != 3 {
		t.Fatalf("the script outside a sandbox: %v", err)
	}
	outside, err := os.ReadFile(f.Name())
	f.Close()
	if err != nil || !bytes.Equal(outside, want) {
		t.Fatalf("outside a sandbox the script wrote %s (%v), want %s", runs(outside), err, runs(want))
	}
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		ways := [][]string{nil}
		if iso != "bwrap" && iso != "krun" {
			ways = append(ways, []string{"--keep-container"})
		}
		for _, flags := range ways {
			name := "one-shot"
			if flags != nil {
				name = "kept"
			}
			args := append(append([]string{"--isolator=" + iso}, flags...), "--", "/bin/sh", "-c", script)
			got, _, code := sandboxTo(t, p.dir, true, args...)
			if code != 3 {
				t.Errorf("%s: exit status %d, want 3; output %s", name, code, runs(got))
			}
			if !bytes.Equal(got, outside) {
				t.Errorf("%s: stdout and stderr as one file got %s, want %s", name, runs(got), runs(outside))
			}

			out, errb, code := sandboxTo(t, p.dir, false, args...)
			if code != 3 {
				t.Errorf("%s: with two files, exit status %d, want 3", name, code)
			}
			if !bytes.Equal(out, wantOut) {
				t.Errorf("%s: with two files, stdout got %s, want %s", name, runs(out), runs(wantOut))
			}
			if !bytes.Equal(errb, wantErr) {
				t.Errorf("%s: with two files, stderr got %s, want %s", name, runs(errb), runs(wantErr))
			}
		}
	})
}

// sandboxTo runs devsandbox with args in dir, stdin /dev/null, and returns what it
// wrote to stdout and stderr, each a file: with one, the same open file for both (as
// a shell's `>F 2>&1` gives), whose bytes are returned as out. devsandbox's own
// lines at the start (it prepares an image) are left out, and logged.
func sandboxTo(t *testing.T, dir string, one bool, args ...string) (out, errb []byte, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	tmp := t.TempDir()
	cmd := command(ctx, dir, baseEnv(), args...)
	o, err := os.Create(filepath.Join(tmp, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	e := o
	if !one {
		if e, err = os.Create(filepath.Join(tmp, "err")); err != nil {
			t.Fatal(err)
		}
		defer e.Close()
	}
	cmd.Stdout, cmd.Stderr = o, e
	err = cmd.Run()
	if cmd.ProcessState == nil {
		t.Fatalf("running %q: %v", cmd.Args, err)
	}
	code = cmd.ProcessState.ExitCode()
	if out, err = os.ReadFile(o.Name()); err != nil {
		t.Fatal(err)
	}
	out = ownLines(t, out)
	if !one {
		if errb, err = os.ReadFile(e.Name()); err != nil {
			t.Fatal(err)
		}
		errb = ownLines(t, errb)
	}
	return out, errb, code
}

// ownLines is b without the lines devsandbox wrote itself before the command's
// output ("devsandbox: preparing the image …"), which it logs.
func ownLines(t *testing.T, b []byte) []byte {
	for bytes.HasPrefix(b, []byte("devsandbox: ")) {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		t.Logf("devsandbox said: %s", b[:i])
		b = b[i+1:]
	}
	return b
}

// TestEmbedOneWriterKeepsOrder: a program that embeds devsandbox and gives Run one
// writer as both Stdio.Out and Stdio.Err gets the command's output in the order the
// command wrote it (one stream on docker and krun), on every isolator it can embed.
func TestEmbedOneWriterKeepsOrder(t *testing.T) {
	var s strings.Builder
	var want []string
	for i := range 4 {
		o, e := strings.Repeat(string(rune('a'+2*i)), 64<<10), strings.Repeat(string(rune('b'+2*i)), 64<<10)
		fmt.Fprintf(&s, "head -c %d /dev/zero | tr '\\0' %c; echo; head -c %d /dev/zero | tr '\\0' %c >&2; echo >&2; ", len(o), o[0], len(e), e[0])
		want = append(want, o, e)
		for j := range 8 {
			fmt.Fprintf(&s, "echo out%d.%d; echo err%d.%d >&2; ", i, j, i, j)
			want = append(want, fmt.Sprintf("out%d.%d", i, j), fmt.Sprintf("err%d.%d", i, j))
		}
	}
	s.WriteString("exit 3")
	forEachIsolatorOf(t, embedIsolators(), func(t *testing.T, iso string) {
		p := newProject(t)
		e := startEmbed(t, embedJob{Iso: iso, Dirs: []string{p.dir}, Script: s.String(), OneWriter: true}, p.root)
		outs, res := e.results(t, 2*time.Minute)
		got := outs[0]
		for len(got) > 0 && strings.HasPrefix(got[0], "devsandbox: ") {
			got = got[1:] // it prepared an image
		}
		if res[0] != "3 nil" || !slices.Equal(got, want) {
			short := func(l []string) []string {
				var r []string
				for _, x := range l {
					if len(x) > 20 {
						x = fmt.Sprintf("%c x%d", x[0], len(x))
					}
					r = append(r, x)
				}
				return r
			}
			t.Errorf("result %q, output %q; want 3 nil, %q\nharness stderr:\n%s", res[0], short(got), short(want), e.stderr.String())
		}
		assertNothingLeft(t, iso, p.root, []*project{p}, false)
	})
}
