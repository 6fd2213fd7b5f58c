package helper

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// viewPlan is a Plan with a sandbox home holding notes and a project, in a fresh
// directory (not below /tmp, which a container's view covers with its own).
func viewPlan(t *testing.T) (*isolator.Plan, string) {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "stubview-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	host, sh, proj := filepath.Join(root, "home", "u"), filepath.Join(root, "data", "home"), filepath.Join(root, "home", "u", "proj")
	for _, d := range []string{sh, proj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(sh, "notes"), []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return &isolator.Plan{
		User:        isolator.User{Name: "u", HostHome: host},
		SandboxHome: sh,
		System:      isolator.SystemView{Paths: []isolator.SystemPath{{Path: "/etc"}}},
		Mounts: []isolator.Mount{
			{Kind: isolator.Bind, Source: sh, Dest: host, Why: "sandbox home"},
			{Kind: isolator.Bind, Source: proj, Dest: proj, Why: "project"},
		},
		Tmp: isolator.Tmp{Kind: "tmpfs"},
	}, root
}

// The docker Stub's View places the home at docker.home, bound from the sandbox
// home on a local engine and a volume (no host file) on one reached over TCP, and
// shows none of the host's /etc: what a run does, with nothing for a harness to
// pass.
func TestStubView(t *testing.T) {
	p, _ := viewPlan(t)
	for _, c := range []struct {
		host string
		err  error // of Open(home/notes)
	}{{"unix:///var/run/docker.sock", nil}, {"tcp://127.0.0.1:2375", isolator.ErrNoHostPath}} {
		s := New(Settings{Image: "i", Home: "/home/agent", Host: c.host}, map[string]string{}, nil)
		v, err := isolator.ViewOf(s, p)
		if err != nil {
			t.Fatalf("%s: ViewOf = %v", c.host, err)
		}
		f, err := v.Open("/home/agent/notes", os.O_RDONLY, 0)
		if !errors.Is(err, c.err) || (c.err != nil) != (err != nil) {
			t.Errorf("%s: Open(/home/agent/notes) = %v, want %v", c.host, err, c.err)
		}
		if err == nil {
			b, _ := io.ReadAll(f)
			f.Close()
			if string(b) != "notes\n" {
				t.Errorf("%s: Open(/home/agent/notes) read %q", c.host, b)
			}
		}
		if err := v.CheckRead("/etc/passwd"); !errors.Is(err, isolator.ErrOutsideView) {
			t.Errorf("%s: CheckRead(/etc/passwd) = %v, want ErrOutsideView: a container's /etc is its image's", c.host, err)
		}
	}
	s := New(Settings{Image: "i"}, map[string]string{"DOCKER_HOST": "ssh://u@h"}, nil)
	if _, err := isolator.ViewOf(s, p); err == nil {
		t.Error("ViewOf with an engine address that does not resolve = nil error")
	}
}
