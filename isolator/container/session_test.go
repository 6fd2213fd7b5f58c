package container

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// Layout.Masks names the setting behind each mask at its in-container path, and the
// init's failure about a mask is told it: the path, the key and the ways on.
func TestMaskFailureNamesTheKey(t *testing.T) {
	p := plan(t.TempDir())
	p.Mounts = append(p.Mounts,
		isolator.Mount{Kind: isolator.MaskDir, HomeRel: ".aws", Why: "sandbox.hide_paths"},
		isolator.Mount{Kind: isolator.MaskDir, Dest: p.Project.Dir + "/conf/secret", Why: "sandbox.hide_paths"},
	)
	l, err := Lay(p, Options{Home: "/home/dev"}, "1.0")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		p.Project.Dir + "/.env":        "sandbox.mask_files",
		"/home/dev/.aws":               "sandbox.hide_paths",
		p.Project.Dir + "/conf/secret": "sandbox.hide_paths",
	}
	if !maps.Equal(l.Masks, want) {
		t.Fatalf("Masks = %v, want %v", l.Masks, want)
	}
	secret := p.Project.Dir + "/conf/secret"
	for _, tt := range []struct {
		failure string
		named   bool
	}{
		{"mask " + secret + " is not an empty directory (it holds [], open " + secret + ": permission denied)", true},
		{"mask " + secret + "/x is not an empty file", false}, // another path
		{"/run/devsandbox/init is writable (ro)", false},
	} {
		r := wire.NewReport(nil)
		if _, err := r.Write([]byte(wire.FailPrefix + tt.failure + wire.MarkerEnd)); err != nil {
			t.Fatal(err)
		}
		s := &Session{report: r, o: SessionOptions{Masks: l.Masks}}
		_, err := s.Result(125)
		if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), tt.failure) {
			t.Fatalf("Result: %v", err)
		}
		hint := secret + " is hidden by sandbox.hide_paths"
		if got := strings.Contains(err.Error(), hint) && strings.Contains(err.Error(), "--isolator=bwrap"); got != tt.named {
			t.Errorf("failure %q: the key named %v, want %v:\n%v", tt.failure, got, tt.named, err)
		}
		// The ways on are a guess at the cause, which one who knows it leaves out
		// (pin.Set.Gone).
		var g *isolator.Guessed
		if errors.As(err, &g) != tt.named || tt.named && g.Err.Error() != "protection could not be applied: "+tt.failure+"; the command did not run" {
			t.Errorf("failure %q: told as a guess %v, want %v: %#v", tt.failure, g != nil, tt.named, g)
		}
	}
}
