package docker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/internal/enginehost"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
)

// An engine's refusal of a bind source it cannot see names the engine, the path,
// what it is and the fix; other errors are not this one.
func TestUnseen(t *testing.T) {
	l := &container.Layout{Home: "/home/u", Workdir: "/tmp/p/sub", Mounts: []container.Mount{
		{Type: container.Bind, Source: "/tmp/p", Target: "/tmp/p"},
		{Type: container.Bind, Source: "/st/home", Target: "/home/u"},
		{Type: container.Bind, Source: "/st/files/0a1b", Target: "/etc/passwd", ReadOnly: true},
		{Type: container.Bind, Source: "/data", Target: "/mnt/data"},
	}}
	addr := Address{Host: "unix:///var/lib/dsb-remote/docker.sock", Origin: "DOCKER_HOST"}
	for msg, want := range map[string]string{
		`Error response from daemon: invalid mount config for type "bind": bind source path does not exist: /tmp/p`: "/tmp/p, the project,",
		`bind source path does not exist: /st/home`:                                                                 "/st/home, the sandbox home,",
		`bind source path does not exist: /st/files/0a1b`:                                                           "a file devsandbox generates",
		`Mounts denied: The path /data is not shared from the host and is not known to Docker.`:                     "/data, the mount at /mnt/data,",
	} {
		err := unseen(errors.New(msg), addr, l)
		if !errors.Is(err, isolator.ErrUnavailable) || !strings.Contains(err.Error(), want) ||
			!strings.Contains(err.Error(), addr.Host) || !strings.Contains(err.Error(), "share the directory") {
			t.Errorf("%s:\n%v\nwant it to hold %q, the engine and the fix", msg, err, want)
		}
	}
	if err := unseen(errors.New("no such image"), addr, l); err != nil {
		t.Errorf("another error: %v", err)
	}
}

// doctor's docker rows report an engine address devsandbox refuses (an ssh:// docker
// context) in the words a launch and `config validate` use, with the address's fix,
// not as an engine to install and start.
func TestCheckRefusedAddress(t *testing.T) {
	dir := t.TempDir()
	meta := filepath.Join(dir, "contexts", "meta", enginehost.ContextID("remote"))
	if err := os.MkdirAll(meta, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(meta, "meta.json"), []byte(`{"Endpoints":{"docker":{"Host":"ssh://me@build"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &Isolator{Env: map[string]string{"DOCKER_CONFIG": dir, "DOCKER_CONTEXT": "remote"}, HostHome: t.TempDir()}
	want := isolator.Status{State: isolator.Unavailable,
		Reason: `docker context "remote": "ssh://me@build": devsandbox does not speak to an engine over ssh; forward its socket (ssh -nNT -L /ABSOLUTE/SOCKET:/var/run/docker.sock HOST) and set docker.host = "unix:///ABSOLUTE/SOCKET"`,
		Fix:    "fix DOCKER_HOST or the docker context (docker context use default), or set docker.host"}
	if st := b.Check(context.Background()); st != want {
		t.Errorf("Check:\n got %+v\nwant %+v", st, want)
	}
	// Diagnose's engine row, doctor's first docker row, says it alike.
	rows := b.Diagnose(context.Background())
	if len(rows) != 1 || rows[0] != (isolator.Check{Name: "docker engine", Status: want}) {
		t.Errorf("Diagnose:\n got %+v\nwant [{docker engine %+v}]", rows, want)
	}
}

// Check (doctor's docker isolator row and verdict) says the isolator cannot run when
// the engine lacks the image, as every run would stop on it, with the fix of
// Diagnose's image row (imageFix); an image that is there, or an engine that fails the
// request otherwise, leaves Check to the engine.
func TestCheckImageMissing(t *testing.T) {
	f := newFake(t)
	b, _ := testIsolator(t, f, false)
	if st := b.Check(context.Background()); st.State != isolator.Active {
		t.Fatalf("Check with the image: %+v", st)
	}
	b.Image = "devsandbox/absent:1"
	want := isolator.Status{State: isolator.Unavailable,
		Reason: "the image devsandbox/absent:1 is not on the docker engine at unix:///fake.sock",
		Fix:    "devsandbox image build (or set docker.image / --image to an image you have)"}
	if st := b.Check(context.Background()); st != want {
		t.Errorf("Check:\n got %+v\nwant %+v", st, want)
	}
	g := &goneEngine{fakeEngine: f, versionOK: true}
	b.dial = func() (Engine, Address, error) { return g, Address{Host: "unix:///fake.sock", Origin: "test"}, nil }
	if st := b.Check(context.Background()); st.State != isolator.Active {
		t.Errorf("Check with an engine that fails image requests: %+v", st)
	}
}
