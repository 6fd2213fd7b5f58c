//go:build linux

package docker

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/pin"
)

// viaContent delivers a read-only anchor the engine cannot mount from its pinned
// directory as the content of what was pinned (a file always; a directory when the
// engine pins nothing, as an empty directory with a copy of each file, a masked
// one's content left out), keeps a directory anchor for a pinning engine, refuses a
// writable file anchor, and leaves every other mount as it is.
func TestViaContent(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	for f, c := range map[string]string{".git/config": "[core]\n", ".git/hooks/pre-commit": "HOOK\n", ".git/hooks/.env": "SECRET=1\n", "rw.txt": "x"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(proj, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proj, f), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plan := func(extra ...isolator.Mount) *isolator.Plan {
		return &isolator.Plan{Project: isolator.Project{Dir: proj}, Mounts: append([]isolator.Mount{
			{Kind: isolator.Bind, Source: proj, Dest: proj, Why: "project"},
			{Kind: isolator.Bind, Source: proj + "/.git/hooks", Dest: proj + "/.git/hooks", ReadOnly: true, Anchor: true, Why: "git hooks"},
			{Kind: isolator.MaskFile, Dest: proj + "/.git/hooks/.env", Why: "sandbox.mask_files"},
			{Kind: isolator.Bind, Source: proj + "/.git/config", Dest: proj + "/.git/config", ReadOnly: true, Anchor: true, Why: "git config"},
		}, extra...)}
	}
	sources := func(p *isolator.Plan) func(int) (*pin.Source, func(), error) {
		return func(i int) (*pin.Source, func(), error) {
			s, err := pin.Open(p.Mounts[i].Source, []string{proj})
			if err != nil {
				return nil, nil, err
			}
			return s, s.Close, nil
		}
	}
	describe := func(ms []isolator.Mount) []string {
		var out []string
		for _, m := range ms {
			d := map[isolator.MountKind]string{isolator.Bind: "bind", isolator.MaskFile: "mask", isolator.MaskDir: "maskdir", isolator.Data: "data"}[m.Kind] + " " + m.Dest
			if m.Kind == isolator.Data {
				d += " " + string(m.Content)
			}
			out = append(out, d)
		}
		return out
	}
	for name, tc := range map[string]struct {
		dirs bool
		want []string
	}{
		"pinning engine": {false, []string{"bind " + proj, "bind " + proj + "/.git/hooks", "mask " + proj + "/.git/hooks/.env", "data " + proj + "/.git/config [core]\n"}},
		"engine that pins nothing": {true, []string{"bind " + proj, "maskdir " + proj + "/.git/hooks", "data " + proj + "/.git/hooks/pre-commit HOOK\n",
			"mask " + proj + "/.git/hooks/.env", "data " + proj + "/.git/config [core]\n"}},
	} {
		t.Run(name, func(t *testing.T) {
			p := plan()
			got, err := viaContent(p, sources(p), tc.dirs)
			if err != nil {
				t.Fatal(err)
			}
			if g := describe(got.Mounts); !slices.Equal(g, tc.want) {
				t.Errorf("mounts:\n%q\nwant\n%q", g, tc.want)
			}
			if len(p.Mounts) != 4 || p.Mounts[3].Kind != isolator.Bind {
				t.Errorf("the Plan given was changed: %q", describe(p.Mounts))
			}
		})
	}
	p := plan(isolator.Mount{Kind: isolator.Bind, Source: proj + "/rw.txt", Dest: proj + "/rw.txt", Anchor: true, Why: "a user's rw bind"})
	if _, err := viaContent(p, sources(p), false); !errors.Is(err, isolator.ErrProtection) {
		t.Errorf("a writable file anchor: %v, want ErrProtection", err)
	}
	p = plan(isolator.Mount{Kind: isolator.Bind, Source: proj + "/gone", Dest: proj + "/gone", ReadOnly: true, Anchor: true, Optional: true})
	if got, err := viaContent(p, remoteSources(p), true); err != nil {
		t.Errorf("an optional anchor that is gone: %v", err)
	} else if len(got.Mounts) != 5 {
		t.Errorf("an optional anchor that is gone: %q; want it left out", describe(got.Mounts))
	}
}
