package helper

import (
	"errors"
	"os"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// The krun Stub's View is a container's: the home at docker.home, bound from the
// sandbox home, and none of the host's /etc.
func TestStubView(t *testing.T) {
	dir := t.TempDir()
	p := &isolator.Plan{
		User:        isolator.User{Name: "u", HostHome: "/home/u"},
		SandboxHome: dir,
		System:      isolator.SystemView{Paths: []isolator.SystemPath{{Path: "/etc"}}},
		Mounts:      []isolator.Mount{{Kind: isolator.Bind, Source: dir, Dest: "/home/u", Why: "sandbox home"}},
		Tmp:         isolator.Tmp{Kind: "tmpfs"},
	}
	if err := os.WriteFile(dir+"/notes", []byte("n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := isolator.ViewOf(Stub(Settings{Home: "/home/agent"}, nil, nil), p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := v.Open("/home/agent/notes", os.O_RDONLY, 0)
	if err != nil {
		t.Errorf("Open(/home/agent/notes) = %v", err)
	} else {
		f.Close()
	}
	if err := v.CheckRead("/etc/passwd"); !errors.Is(err, isolator.ErrOutsideView) {
		t.Errorf("CheckRead(/etc/passwd) = %v, want ErrOutsideView", err)
	}
}
