package krun

import (
	"errors"
	"os"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/krun/helper"
)

// The backend itself, as devsandbox-krun runs it or a harness embeds it, gives
// ViewOf the Stub's view: the home at docker.home, none of the host's /etc. Before,
// ViewOf failed with ErrUnavailable for it.
func TestIsolatorView(t *testing.T) {
	sh := t.TempDir()
	if err := os.WriteFile(sh+"/notes", []byte("n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &isolator.Plan{
		User:        isolator.User{Name: "u", HostHome: "/home/u"},
		SandboxHome: sh,
		System:      isolator.SystemView{Paths: []isolator.SystemPath{{Path: "/etc"}}},
		Mounts:      []isolator.Mount{{Kind: isolator.Bind, Source: sh, Dest: "/home/u", Why: "sandbox home"}},
		Tmp:         isolator.Tmp{Kind: "tmpfs"},
	}
	v, err := isolator.ViewOf(&Isolator{Settings: helper.Settings{Home: "/home/agent"}}, p)
	if err != nil {
		t.Fatalf("ViewOf = %v", err)
	}
	f, err := v.Open("/home/agent/notes", os.O_RDONLY, 0)
	if err != nil {
		t.Errorf("Open(/home/agent/notes) = %v", err)
	} else {
		f.Close()
	}
	if err := v.CheckRead("/etc/hostname"); !errors.Is(err, isolator.ErrOutsideView) {
		t.Errorf("CheckRead(/etc/hostname) = %v, want ErrOutsideView", err)
	}
}
