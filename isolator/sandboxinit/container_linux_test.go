package sandboxinit

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// A check that fails (a mask the engine left with content; for a test process also its
// privileges) ends the container init with 125 before the command starts.
func TestContainerInitChecksBeforeCommand(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	if err := os.WriteFile(full, []byte("TOKEN=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	t.Setenv(wire.ManifestEnv, (&wire.Manifest{Checks: []wire.Check{{Kind: wire.CheckMaskFile, Path: full}}}).Encode())
	var stderr bytes.Buffer
	if code := ContainerMain([]string{"--", "/bin/sh", "-c", "touch " + marker}, &stderr); code != ExitSetupFailed {
		t.Errorf("exit %d, want %d; stderr %q", code, ExitSetupFailed, stderr.String())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran although a check failed")
	}
}

// The view is checked before the session's hello is read (while it is on its way):
// a view that is off ends the init with 125 before the session's secrets reach it.
func TestContainerInitChecksViewBeforeHello(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	if err := os.WriteFile(full, []byte("TOKEN=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(wire.ManifestEnv, (&wire.Manifest{Checks: []wire.Check{{Kind: wire.CheckMaskFile, Path: full}}}).Encode())
	var hello bytes.Buffer
	if err := wire.WriteHello(&hello, &wire.Hello{Env: map[string]string{"API_TOKEN": "s3cret"}}); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := w.Write(hello.Bytes()); err != nil {
		t.Fatal(err)
	}
	stdin := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = stdin }()
	marker := filepath.Join(t.TempDir(), "ran")
	var stderr bytes.Buffer
	if code := ContainerMain([]string{"--framed", "--", "/bin/sh", "-c", "touch " + marker}, &stderr); code != ExitSetupFailed {
		t.Errorf("exit %d, want %d; stderr %q", code, ExitSetupFailed, stderr.String())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran although a check failed")
	}
	// Nothing read the hello: it is still in the pipe, whole.
	w.Close()
	left, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(left, hello.Bytes()) {
		t.Errorf("the init read the session's hello (%d of %d bytes left, %v) although the view's check failed", len(left), hello.Len(), err)
	}
}

// With wire.StartFirstArg the command starts before the hello is read; the hello
// must then be empty: one that carries a secret, a file, a terminal or a nonce ends
// the command (gone) without a further frame read, an empty one lets the frames
// after it reach the command. So does a hello from a host of another job-control
// protocol (wire.JobProtocol; a host before version 2 names none), saying so.
func TestStartFirstHelloMustBeEmpty(t *testing.T) {
	const jobs = wire.JobProtocol
	for name, tc := range map[string]struct {
		hello *wire.Hello
		ends  bool
		says  string // in the init's message when it ends the command
	}{
		"empty":                 {&wire.Hello{Jobs: jobs}, false, ""},
		"a secret":              {&wire.Hello{Jobs: jobs, Env: map[string]string{"API_TOKEN": "s3cret"}}, true, wire.StartFirstArg},
		"a file":                {&wire.Hello{Jobs: jobs, Files: map[string][]byte{"key": []byte("k")}}, true, wire.StartFirstArg},
		"a terminal":            {&wire.Hello{Jobs: jobs, TTY: true, Rows: 24, Cols: 80}, true, wire.StartFirstArg},
		"a nonce":               {&wire.Hello{Jobs: jobs, Nonce: "n0nce"}, true, wire.StartFirstArg},
		"an end":                {&wire.Hello{Jobs: jobs, End: "e0"}, false, ""},
		"a host of protocol 1":  {&wire.Hello{}, true, "the host speaks job-control protocol 0 and this devsandbox-init 2: they are from different builds"},
		"a host of protocol 99": {&wire.Hello{Jobs: 99}, true, "the host speaks job-control protocol 99 and this devsandbox-init 2"},
	} {
		t.Run(name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var after bytes.Buffer
			if err := wire.WriteFrame(&after, wire.FrameData, []byte("input\n")); err != nil {
				t.Fatal(err)
			}
			if err := wire.WriteHello(w, tc.hello); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(after.Bytes()); err != nil {
				t.Fatal(err)
			}
			w.Close()
			cio, err := newPipeIO(io.Discard, io.Discard, false)
			if err != nil {
				t.Fatal(err)
			}
			defer cio.finish()
			var stderr bytes.Buffer
			c := &container{stderr: &stderr, framed: true, startFirst: true, stdin: r, laterEnd: make(chan string, 1)}
			gone := make(chan struct{})
			go c.readFrames(cio, 0, nil, gone, true)
			<-gone
			if end := <-c.laterEnd; !tc.ends && end != tc.hello.End {
				t.Errorf("the hello's End reached the init as %q, want %q", end, tc.hello.End)
			}
			left, _ := io.ReadAll(r)
			if tc.ends {
				if !bytes.Equal(left, after.Bytes()) || !bytes.Contains(stderr.Bytes(), []byte(tc.says)) {
					t.Errorf("a hello with %s: %d bytes left unread (want the %d after it), stderr %q", name, len(left), after.Len(), stderr.String())
				}
				return
			}
			if len(left) != 0 {
				t.Errorf("frames after the empty hello not read: %d bytes left", len(left))
			}
			got := make([]byte, len("input\n"))
			if _, err := io.ReadFull(cio.r, got); err != nil || string(got) != "input\n" {
				t.Errorf("the command's stdin got %q (%v), want the input after the hello", got, err)
			}
		})
	}
}

// The command's environment: the image's ENV over the engine's variables, under the
// session's (the run's own the host already left out of it).
func TestCommandEnv(t *testing.T) {
	environ := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME=devsandbox", "HOME=/home/u", "LANG=C.UTF-8", "TOKEN=secret"}
	image := []string{"PATH=/image/bin", "GODEBUG=tlsrsakex=1", "TOKEN=image", "BAD", "=x"}
	got := commandEnv(environ, image, map[string]string{"TOKEN": "secret"})
	want := []string{"PATH=/image/bin", "HOSTNAME=devsandbox", "HOME=/home/u", "LANG=C.UTF-8", "TOKEN=secret", "GODEBUG=tlsrsakex=1"}
	if !slices.Equal(got, want) {
		t.Errorf("commandEnv = %q, want %q", got, want)
	}
	if environ[0] != "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" {
		t.Errorf("commandEnv changed its argument: %q", environ)
	}
	if v, ok := envValue(got, "PATH"); !ok || v != "/image/bin" {
		t.Errorf("envValue(PATH) = %q, %v", v, ok)
	}
	if _, ok := envValue(got, "PAT"); ok {
		t.Errorf("envValue found PAT")
	}
}
