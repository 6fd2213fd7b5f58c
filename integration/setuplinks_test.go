//go:build integration

package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/internal/sh"
)

// setupLink is one attack on bwrap's own writes during setup (CVE-2026-87766,
// bubblewrap < 0.12): a first run replaces a directory (or a file name) of a host
// directory the sandbox can write with a symlink out through /oldroot, then a second
// run places a mount destination below it. bwrap 0.8 creates the mount point, and
// its missing parents, wherever the link leads: on the host, as the user.
type setupLink struct {
	name string
	// prepare sets the project up on the host and returns the config (none: no
	// --config) and the environment of both runs.
	prepare func(p *project) (config string, env []string)
	// link is the path, in the sandbox, that the first run replaces with a link.
	link func(p *project) string
	// between runs on the host after the first run (the user logs a tool in).
	between func(p *project)
	// file: the link replaces a file's name, not a directory.
	file bool
}

func setupLinks() []setupLink {
	claude := func(p *project) (string, []string) {
		p.mkdir("claude")
		return "", []string{"CLAUDE_CONFIG_DIR=" + p.path("claude")}
	}
	return []setupLink{
		{
			// The project's mount point is a directory of the sandbox home (the
			// project's parent directories under the home).
			name: "sandbox home, parent of the project",
			link: func(p *project) string { return p.root },
		},
		{
			// A mask below a directory of the sandbox home (hide_paths).
			name: "sandbox home, parent of a mask",
			prepare: func(p *project) (string, []string) {
				p.write("hidden/secret", "SECRET\n")
				return fmt.Sprintf("[sandbox]\nhide_paths = [%q]\n", p.path("hidden/secret")), nil
			},
			link: func(p *project) string { return p.path("hidden") },
		},
		{
			// A user's host mount inside a user's read-write bind.
			name: "rw_binds, a user bind inside",
			prepare: func(p *project) (string, []string) {
				p.mkdir("rw/a")
				p.mkdir("src")
				return fmt.Sprintf("[sandbox]\nrw_binds = [%q]\nhost_mounts = [%q]\n",
					p.path("rw"), p.path("src")+":"+p.path("rw/a/mnt")), nil
			},
			link: func(p *project) string { return p.path("rw/a") },
		},
		{
			// Claude's directory (the sandbox's own copy, a host directory it
			// writes) holds the read-write bind of this project's sessions.
			name:    "tool dir, a shared directory inside",
			prepare: claude,
			link:    func(p *project) string { return p.path("claude/projects") },
		},
		{
			// The OAuth token Claude Code shares with the host: logged in on the host
			// after the sandbox planted a link at its name.
			name:    "tool dir, the credential file",
			prepare: claude,
			link:    func(p *project) string { return p.path("claude/.credentials.json") },
			between: func(p *project) { p.write("claude/.credentials.json", "{}\n") },
			file:    true,
		},
		{
			// A user's host mount inside the project.
			name: "project, a user bind inside",
			prepare: func(p *project) (string, []string) {
				p.mkdir("proj/sub")
				p.mkdir("src")
				return fmt.Sprintf("[sandbox]\nhost_mounts = [%q]\n", p.path("src")+":"+p.path("proj/sub/mnt")), nil
			},
			link: func(p *project) string { return p.path("proj/sub") },
		},
		{
			// A mask in the project below the planted directory link.
			name: "project, a mask inside",
			prepare: func(p *project) (string, []string) {
				p.write("proj/sub/.env", "SECRET=1\n")
				return "", nil
			},
			link: func(p *project) string { return p.path("proj/sub") },
		},
	}
}

// linkTargets returns the targets of a link at link (a path in the sandbox) that
// lead bwrap, during setup, to the host path host: absolute through /oldroot, and
// relative, up out of /newroot.
func linkTargets(link, host string) map[string]string {
	up := strings.Repeat("../", strings.Count(filepath.Dir(link), "/")+1)
	return map[string]string{
		"absolute": "/oldroot" + host,
		"relative": up + "oldroot" + host,
	}
}

// CVE-2026-87766: bwrap before 0.12 follows a parent symlink under the new root
// when it creates a mount point. For every kind of host directory the sandbox can
// write and a later run places a destination in, a link planted there leads
// nowhere on the host: the second run stops (125) naming the link, or runs without
// creating anything outside.
func TestSetupLinks(t *testing.T) {
	requireBwrap(t)
	for _, c := range setupLinks() {
		for _, variant := range []string{"absolute", "relative"} {
			t.Run(c.name+"/"+variant, func(t *testing.T) {
				p := newProject(t)
				var config string
				var env []string
				if c.prepare != nil {
					config, env = c.prepare(p)
				}
				args := []string{"--isolator=bwrap", "--egress=open"}
				if config != "" {
					args = append(args, "--config", p.writeConfig("bwrap", "setup-links.toml", config))
				}
				// An existing host directory out of the sandbox's view: bwrap 0.8
				// creates the mount point (and missing directories on the way) in it.
				victim := p.path("victim")
				p.mkdir("victim")
				escaped := victim
				if c.file {
					escaped = filepath.Join(victim, "escaped")
				}
				link := c.link(p)
				target := linkTargets(link, escaped)[variant]
				// The directory holds a mount point: it can be renamed, not removed.
				plant := fmt.Sprintf("mv %s %s.old 2>/dev/null; ln -s %s %s && echo planted",
					sh.Quote(link), sh.Quote(link), sh.Quote(target), sh.Quote(link))
				r := run(t, p.dir, env, "", append(args, "--", "/bin/sh", "-c", plant)...)
				if r.code != 0 || !strings.Contains(r.stdout, "planted") {
					t.Fatalf("the first run did not plant the link:\n%s", r)
				}
				if c.between != nil {
					c.between(p)
				}
				r = run(t, p.dir, env, "", append(args, "--", "/bin/true")...)
				if tree := treeOf(t, victim); len(tree) != 1 {
					t.Fatalf("the second run created files in %s on the host through the planted link: %v\n%s", victim, tree, r)
				}
				switch {
				case r.code == 125 && strings.Contains(r.stderr, filepath.Base(link)) && strings.Contains(r.stderr, "symlink"):
					t.Logf("refused: %s", strings.TrimSpace(r.stderr))
				case r.code == 0:
					t.Logf("ran, creating nothing outside")
				default:
					t.Fatalf("want 125 naming the link %s, or 0:\n%s", filepath.Base(link), r)
				}
			})
		}
	}
}
