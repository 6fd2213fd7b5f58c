package docker

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// The backend itself, as devsandbox-docker runs it or a harness embeds it in its own
// process, gives ViewOf the Stub's view: the home at docker.home, from the sandbox
// home on a local engine and a volume (no host file) on one reached over TCP, and
// none of the host's /etc. Before, ViewOf failed with ErrUnavailable for it.
func TestIsolatorView(t *testing.T) {
	sh := t.TempDir()
	if err := os.WriteFile(filepath.Join(sh, "notes"), []byte("n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &isolator.Plan{
		User:        isolator.User{Name: "u", HostHome: "/home/u"},
		SandboxHome: sh,
		System:      isolator.SystemView{Paths: []isolator.SystemPath{{Path: "/etc"}}},
		Mounts:      []isolator.Mount{{Kind: isolator.Bind, Source: sh, Dest: "/home/u", Why: "sandbox home"}},
		Tmp:         isolator.Tmp{Kind: "tmpfs"},
	}
	for host, want := range map[string]error{"unix:///var/run/docker.sock": nil, "tcp://127.0.0.1:2375": isolator.ErrNoHostPath} {
		b := &Isolator{Options: Options{Home: "/home/agent"}, HostAddr: host, Env: map[string]string{}}
		v, err := isolator.ViewOf(b, p)
		if err != nil {
			t.Fatalf("%s: ViewOf = %v", host, err)
		}
		f, err := v.Open("/home/agent/notes", os.O_RDONLY, 0)
		if f != nil {
			f.Close()
		}
		if !errors.Is(err, want) || (want != nil) != (err != nil) {
			t.Errorf("%s: Open(/home/agent/notes) = %v, want %v", host, err, want)
		}
		if err := v.CheckRead("/etc/hostname"); !errors.Is(err, isolator.ErrOutsideView) {
			t.Errorf("%s: CheckRead(/etc/hostname) = %v, want ErrOutsideView: a container's /etc is its image's", host, err)
		}
	}
	b := &Isolator{Env: map[string]string{"DOCKER_HOST": "ssh://u@h"}}
	if _, err := isolator.ViewOf(b, p); err == nil {
		t.Error("ViewOf with an engine address that does not resolve = nil error")
	}
}
