package prestart

import (
	"errors"
	"strings"
	"testing"
)

func launch() *Launch {
	return &Launch{
		Path:    "/usr/bin/bwrap",
		Argv:    []string{"bwrap", "--bind-fd", "5", "/home/u/src/app", "--file", "6", "/run/x", "--seccomp", "7", "--", "true"},
		Env:     []string{"HOME=/home/u", "API_KEY=s3cr3t"},
		FDs:     []FD{{FD: 5, Kind: KindSource, ID: Identity{Dev: 2049, Ino: 100, MntID: 29}}, {FD: 6, Kind: KindContent, Content: []byte("Host *\n")}, {FD: 7, Kind: KindSeccomp}},
		Session: "/home/u/.local/state/devsandbox/app-1/tmp/s-abc",
	}
}

func TestCompare(t *testing.T) {
	if err := Compare(launch(), launch()); err != nil {
		t.Fatalf("equal launches: %v", err)
	}
	for name, edit := range map[string]func(*Launch){
		"the binary":               func(l *Launch) { l.Path = "/tmp/bwrap" },
		"the session":              func(l *Launch) { l.Session = "/home/u/.local/state/devsandbox/app-1/tmp/s-other" },
		"no session":               func(l *Launch) { l.Session = "" },
		"an argument":              func(l *Launch) { l.Argv[3] = "/home/u" },
		"one argument more":        func(l *Launch) { l.Argv = append(l.Argv, "-x") },
		"a secret's value":         func(l *Launch) { l.Env[1] = "API_KEY=zz9value" },
		"a variable more":          func(l *Launch) { l.Env = append(l.Env, "X=1") },
		"variables in other order": func(l *Launch) { l.Env[0], l.Env[1] = l.Env[1], l.Env[0] },
		"another inode":            func(l *Launch) { l.FDs[0].ID.Ino = 101 },
		"another device":           func(l *Launch) { l.FDs[0].ID.Dev = 2050 },
		"another mount":            func(l *Launch) { l.FDs[0].ID.MntID = 30 },
		"another descriptor kind":  func(l *Launch) { l.FDs[1].Kind = KindSource },
		"another descriptor":       func(l *Launch) { l.FDs[2].FD = 8 },
		"a descriptor fewer":       func(l *Launch) { l.FDs = l.FDs[:2] },
		"an unidentified source":   func(l *Launch) { l.FDs[0].ID = Identity{} },
		"another content":          func(l *Launch) { l.FDs[1].Content = []byte("Host *\nProxyCommand nc x 1\n") },
		"a content a byte shorter": func(l *Launch) { l.FDs[1].Content = l.FDs[1].Content[:6] },
		"an empty content":         func(l *Launch) { l.FDs[1].Content = nil },
		"a pipe with a content":    func(l *Launch) { l.FDs[1].Kind = KindData },
		"a filter with a content":  func(l *Launch) { l.FDs[2].Content = []byte("x") },
	} {
		early, fresh := launch(), launch()
		edit(early)
		if name == "an unidentified source" {
			edit(fresh)
		}
		err := Compare(early, fresh)
		if !errors.Is(err, ErrMismatch) {
			t.Errorf("%s: Compare = %v, want ErrMismatch", name, err)
			continue
		}
		for _, v := range []string{"s3cr3t", "zz9value"} {
			if strings.Contains(err.Error(), v) {
				t.Errorf("%s: the difference %q shows a value", name, err)
			}
		}
	}
}
