//go:build integration

package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/internal/sh"
)

// hideMoved is one attack on a mask that lies in a host directory the sandbox can
// write: a first run renames a directory above the masked path (the mask's mount
// moves along in the sandbox's namespace), optionally leaving a dangling link at the
// old name, so that a planner looking for the path at its old name finds nothing;
// a second run reads the moved secret unmasked.
type hideMoved struct {
	name string
	// prepare writes the secret (containing hideSecret) on the host and returns the
	// config of both runs and extra flags.
	prepare func(p *project) (config string, flags []string)
	// from is the directory the first run renames (to from+".moved"); dir is the
	// directory the second run searches for the secret.
	from, dir string
}

const hideSecret = "TOPSECRET-4711"

func hideMovedCases() []hideMoved {
	return []hideMoved{
		{
			name: "rw_binds, hide_paths file, parent renamed",
			prepare: func(p *project) (string, []string) {
				p.write("shared/secret/key", hideSecret+"\n")
				return fmt.Sprintf("[sandbox]\nrw_binds = [%q]\nhide_paths = [%q]\n", p.path("shared"), p.path("shared/secret/key")), nil
			},
			from: "shared/secret", dir: "shared",
		},
		{
			name: "rw_binds, hide_paths file, grandparent renamed",
			prepare: func(p *project) (string, []string) {
				p.write("shared/a/secret/key", hideSecret+"\n")
				return fmt.Sprintf("[sandbox]\nrw_binds = [%q]\nhide_paths = [%q]\n", p.path("shared"), p.path("shared/a/secret/key")), nil
			},
			from: "shared/a", dir: "shared",
		},
		{
			name: "rw_binds, hide_paths directory, parent renamed",
			prepare: func(p *project) (string, []string) {
				p.write("shared/a/secret/key", hideSecret+"\n")
				return fmt.Sprintf("[sandbox]\nrw_binds = [%q]\nhide_paths = [%q]\n", p.path("shared"), p.path("shared/a/secret")), nil
			},
			from: "shared/a", dir: "shared",
		},
		{
			name: "project, hide_paths file, parent renamed",
			prepare: func(p *project) (string, []string) {
				p.write("proj/conf/secret/key", hideSecret+"\n")
				return fmt.Sprintf("[sandbox]\nhide_paths = [%q]\n", p.path("proj/conf/secret/key")), nil
			},
			from: "proj/conf/secret", dir: "proj",
		},
		{
			// The .env's anchor must not cover the hide_paths mask beside it.
			name: "project, hide_paths file beside a .env, parent renamed",
			prepare: func(p *project) (string, []string) {
				p.write("proj/conf/secret/key", hideSecret+"\n")
				p.write("proj/conf/.env", "A=1\n")
				return fmt.Sprintf("[sandbox]\nhide_paths = [%q]\n", p.path("proj/conf/secret/key")), nil
			},
			from: "proj/conf/secret", dir: "proj",
		},
		{
			name: "project, mask_files .env, parent renamed",
			prepare: func(p *project) (string, []string) {
				p.write("proj/conf/.env", hideSecret+"\n")
				return "", nil
			},
			from: "proj/conf", dir: "proj",
		},
		{
			name: "rw_binds, proxy.credentials value_file, parent renamed",
			prepare: func(p *project) (string, []string) {
				p.write("shared/cred/token", hideSecret+"\n")
				return fmt.Sprintf("[sandbox]\nrw_binds = [%q]\n[proxy]\nmitm = true\n[[proxy.credentials]]\nhost = \"api.example.test\"\nheader = \"Authorization\"\nvalue_file = %q\n",
					p.path("shared"), p.path("shared/cred/token")), []string{"--egress=proxy"}
			},
			from: "shared/cred", dir: "shared",
		},
	}
}

// A hidden path's parent renamed in one run (with or without a dangling link left at
// the old name) must not show the secret in the next: the rename fails, or the next
// run stops (125) naming the path, or masks it where it went.
func TestHideMoved(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		forEachContainerHome(t, func(t *testing.T, home string) { hideMovedOn(t, iso, home) })
	})
}

func hideMovedOn(t *testing.T, iso, home string) {
	for _, c := range hideMovedCases() {
		for _, variant := range []string{"rename", "rename+dangling link"} {
			t.Run(c.name+"/"+variant, func(t *testing.T) {
				// Each case has a project, a config and a sandbox of its own: on a
				// docker engine the cases of one home run side by side (-parallel,
				// the CPUs), a launch's waits on the engine overlapping another's
				// work (docker 62.7/52.6 s -> 38.8/41.2 s under load). krun's
				// launches gained nothing so (11.0 -> 14.5 s): they stay one by one.
				if iso != "krun" {
					t.Parallel()
				}
				p := newProject(t)
				config, flags := c.prepare(p)
				args := []string{"--isolator=" + iso, "--egress=open"}
				args = append(args, flags...)
				if config != "" {
					args = append(args, "--config", p.writeConfigHome(iso, "hide-moved.toml", config, home))
				}
				from := p.path(c.from)
				move := fmt.Sprintf("mv %s %s.moved && echo moved", sh.Quote(from), sh.Quote(from))
				if variant != "rename" {
					move += fmt.Sprintf(" && ln -s %s %s && echo linked", sh.Quote(from+".gone"), sh.Quote(from))
				}
				r := run(t, p.dir, nil, "", append(args, "--", "/bin/sh", "-c", move+"; true")...)
				if refusesAnchors(iso) {
					// Every case masks a path below a directory of a read-write bind.
					wantAnchorsRefused(t, r)
					return
				}
				if r.code != 0 {
					t.Fatalf("the first run failed:\n%s", r)
				}
				t.Logf("first run: moved=%v", strings.Contains(r.stdout, "moved"))
				look := fmt.Sprintf("grep -rs %s %s; true", hideSecret, sh.Quote(p.path(c.dir)))
				r = run(t, p.dir, nil, "", append(args, "--", "/bin/sh", "-c", look)...)
				switch {
				case strings.Contains(r.stdout, hideSecret):
					t.Fatalf("the second run read the moved secret:\n%s", r)
				case r.code == 125:
					t.Logf("refused: %s", strings.TrimSpace(r.stderr))
				case r.code != 0:
					t.Fatalf("want 0 (secret not shown) or 125:\n%s", r)
				}
			})
		}
	}
}

// What a run before anchors could leave: the secret moved away and a dangling link at
// the hidden path's parent. The planner, following the link, finds nothing to mask;
// the run stops (125) naming the link.
func TestHideMovedLeftover(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	p.write("shared/secret.moved/key", hideSecret+"\n")
	if err := os.Symlink(p.path("shared/secret.gone"), p.path("shared/secret")); err != nil {
		t.Fatal(err)
	}
	p.chownUp(p.path("shared/secret"))
	config := fmt.Sprintf("[sandbox]\nrw_binds = [%q]\nhide_paths = [%q]\n", p.path("shared"), p.path("shared/secret/key"))
	args := []string{"--isolator=bwrap", "--egress=open", "--config", p.writeConfig("bwrap", "hide-moved.toml", config)}
	r := run(t, p.dir, nil, "", append(args, "--", "/bin/sh", "-c", fmt.Sprintf("grep -rs %s %s; true", hideSecret, sh.Quote(p.path("shared"))))...)
	if r.code != 125 || strings.Contains(r.stdout, hideSecret) || !strings.Contains(r.stderr, p.path("shared/secret")+" is a symlink") || !strings.Contains(r.stderr, "hide_paths") {
		t.Fatalf("want 125 naming the link and the key:\n%s", r)
	}
}
