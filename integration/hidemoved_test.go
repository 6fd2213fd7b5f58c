//go:build integration

package integration

import (
	"fmt"
	"os"
	"slices"
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
	// prepare writes the case's files on the host, the secret holding secret, at the
	// names at gives the case's own ("shared/…" outside the project, "proj/…" in it),
	// and returns what the case configures.
	prepare func(p *project, at func(string) string, secret string) hideConf
	// from is the directory the first run renames (to from+".moved"); dir is the
	// directory the second run searches for the secret (names before at).
	from, dir string
	// proxy: the case's runs go through the proxy.
	proxy bool
}

// hideConf is what a hideMoved case configures: read-write binds, hidden paths, and
// a proxy.credentials value_file.
type hideConf struct {
	rwBinds, hidePaths []string
	credFile           string
}

const hideSecret = "TOPSECRET-4711"

func hideMovedCases() []hideMoved {
	return []hideMoved{
		{
			name: "rw_binds, hide_paths file, parent renamed",
			prepare: func(p *project, at func(string) string, secret string) hideConf {
				p.write(at("shared/secret/key"), secret+"\n")
				return hideConf{rwBinds: []string{p.path(at("shared"))}, hidePaths: []string{p.path(at("shared/secret/key"))}}
			},
			from: "shared/secret", dir: "shared",
		},
		{
			name: "rw_binds, hide_paths file, grandparent renamed",
			prepare: func(p *project, at func(string) string, secret string) hideConf {
				p.write(at("shared/a/secret/key"), secret+"\n")
				return hideConf{rwBinds: []string{p.path(at("shared"))}, hidePaths: []string{p.path(at("shared/a/secret/key"))}}
			},
			from: "shared/a", dir: "shared",
		},
		{
			name: "rw_binds, hide_paths directory, parent renamed",
			prepare: func(p *project, at func(string) string, secret string) hideConf {
				p.write(at("shared/a/secret/key"), secret+"\n")
				return hideConf{rwBinds: []string{p.path(at("shared"))}, hidePaths: []string{p.path(at("shared/a/secret"))}}
			},
			from: "shared/a", dir: "shared",
		},
		{
			name: "project, hide_paths file, parent renamed",
			prepare: func(p *project, at func(string) string, secret string) hideConf {
				p.write(at("proj/conf/secret/key"), secret+"\n")
				return hideConf{hidePaths: []string{p.path(at("proj/conf/secret/key"))}}
			},
			from: "proj/conf/secret", dir: "proj",
		},
		{
			// The .env's anchor must not cover the hide_paths mask beside it.
			name: "project, hide_paths file beside a .env, parent renamed",
			prepare: func(p *project, at func(string) string, secret string) hideConf {
				p.write(at("proj/conf/secret/key"), secret+"\n")
				p.write(at("proj/conf/.env"), "A=1\n")
				return hideConf{hidePaths: []string{p.path(at("proj/conf/secret/key"))}}
			},
			from: "proj/conf/secret", dir: "proj",
		},
		{
			name: "project, mask_files .env, parent renamed",
			prepare: func(p *project, at func(string) string, secret string) hideConf {
				p.write(at("proj/conf/.env"), secret+"\n")
				return hideConf{}
			},
			from: "proj/conf", dir: "proj",
		},
		{
			name: "rw_binds, proxy.credentials value_file, parent renamed",
			prepare: func(p *project, at func(string) string, secret string) hideConf {
				p.write(at("shared/cred/token"), secret+"\n")
				return hideConf{rwBinds: []string{p.path(at("shared"))}, credFile: p.path(at("shared/cred/token"))}
			},
			from: "shared/cred", dir: "shared", proxy: true,
		},
	}
}

// hideMovedConfig renders the config of confs together; a value_file is the
// credential of a host of its own (api-<i>.example.test).
func hideMovedConfig(confs []hideConf) string {
	var binds, hides, creds []string
	for i, c := range confs {
		binds = append(binds, c.rwBinds...)
		hides = append(hides, c.hidePaths...)
		if c.credFile != "" {
			creds = append(creds, fmt.Sprintf("[[proxy.credentials]]\nhost = \"api-%d.example.test\"\nheader = \"Authorization\"\nvalue_file = %q\n", i, c.credFile))
		}
	}
	config := "[sandbox]\n"
	if len(binds) > 0 {
		config += "rw_binds = [" + quoteList(binds) + "]\n"
	}
	if len(hides) > 0 {
		config += "hide_paths = [" + quoteList(hides) + "]\n"
	}
	if len(creds) > 0 {
		config += "[proxy]\nmitm = true\n" + strings.Join(creds, "")
	}
	return config
}

// A hidden path's parent renamed in one run (with or without a dangling link left at
// the old name) must not show the secret in the next: the rename fails, or the next
// run stops (125) naming the path, or masks it where it went.
func TestHideMoved(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		forEachContainerHome(t, func(t *testing.T, home string) { hideMovedOn(t, iso, home) })
	})
}

// hideMovedAttack is one case in one variant: the case's files are at at's names and
// its secret is secret.
type hideMovedAttack struct {
	c       hideMoved
	variant string
	at      func(string) string
	secret  string
}

func (a hideMovedAttack) name() string { return a.c.name + "/" + a.variant }

// hideMovedOn runs every case in both variants on iso, with the containers' home at
// home. The attacks that run with the same flags share one project and one pair of
// runs — each in directories of its own with a secret of its own, the config all
// their settings — and each one's outcome is then its own subtest: the first run's
// rename of its directory, the second run's output for its secret. (One project and
// one pair of runs per attack cost 56 launches per isolator, 95 s of the suite.) A
// second run that stops (125) could be any attack's doing: then every attack of that
// group runs again alone (hideMovedAlone), as the test ran before.
func hideMovedOn(t *testing.T, iso, home string) {
	groups := map[bool][]hideMovedAttack{} // by "the run goes through the proxy"
	n := 0
	for _, c := range hideMovedCases() {
		for _, variant := range []string{"rename", "rename+dangling link"} {
			tag := fmt.Sprintf("c%02d", n)
			n++
			at := func(rel string) string {
				if d, ok := strings.CutPrefix(rel, "proj/"); ok {
					return "proj/" + tag + "/" + d
				}
				if d, ok := strings.CutPrefix(rel, "shared"); ok {
					return "shared-" + tag + d
				}
				return rel
			}
			a := hideMovedAttack{c: c, variant: variant, at: at, secret: hideSecret + "-" + tag}
			groups[c.proxy] = append(groups[c.proxy], a)
		}
	}
	for _, proxy := range []bool{false, true} {
		attacks := groups[proxy]
		p := newProject(t)
		var confs []hideConf
		for _, a := range attacks {
			confs = append(confs, a.c.prepare(p, a.at, a.secret))
		}
		args := hideMovedArgs(p, iso, home, hideMovedConfig(confs), proxy)
		var move, look []string
		for _, a := range attacks {
			from := p.path(a.at(a.c.from))
			m := fmt.Sprintf("mv %s %s.moved && echo moved %s", sh.Quote(from), sh.Quote(from), a.secret)
			if a.variant != "rename" {
				m += fmt.Sprintf(" && ln -s %s %s && echo linked %s", sh.Quote(from+".gone"), sh.Quote(from), a.secret)
			}
			move = append(move, m+";")
			if d := sh.Quote(p.path(a.at(a.c.dir))); !slices.Contains(look, d) {
				look = append(look, d)
			}
		}
		first := run(t, p.dir, nil, "", append(args, "--", "/bin/sh", "-c", strings.Join(move, " ")+" true")...)
		if refusesAnchors(iso) {
			// Every case masks a path below a directory of a read-write bind.
			wantAnchorsRefused(t, first)
			continue
		}
		if first.code != 0 {
			t.Fatalf("the first run failed:\n%s", first)
		}
		second := run(t, p.dir, nil, "", append(args, "--", "/bin/sh", "-c", fmt.Sprintf("grep -rs %s %s; true", hideSecret, strings.Join(look, " ")))...)
		switch {
		case second.code == 125:
			t.Logf("the second run of the attacks together stopped (125); each runs alone:\n%s", second)
			for _, a := range attacks {
				t.Run(a.name(), func(t *testing.T) { hideMovedAlone(t, iso, home, a.c, a.variant) })
			}
			continue
		case second.code != 0:
			t.Fatalf("want 0 (no secret shown) or 125:\n%s", second)
		}
		for _, a := range attacks {
			t.Run(a.name(), func(t *testing.T) {
				t.Logf("first run: moved=%v", strings.Contains(first.stdout, "moved "+a.secret+"\n"))
				if strings.Contains(second.stdout, a.secret) {
					t.Fatalf("the second run read the moved secret %s:\n%s", a.secret, second)
				}
			})
		}
	}
}

// hideMovedArgs are the flags of both runs of attacks with config.
func hideMovedArgs(p *project, iso, home, config string, proxy bool) []string {
	args := []string{"--isolator=" + iso, "--egress=open"}
	if proxy {
		args = append(args, "--egress=proxy")
	}
	return append(args, "--config", p.writeConfigHome(iso, "hide-moved.toml", config, home))
}

// hideMovedAlone is case c in variant on iso in a project of its own.
func hideMovedAlone(t *testing.T, iso, home string, c hideMoved, variant string) {
	p := newProject(t)
	at := func(rel string) string { return rel }
	conf := c.prepare(p, at, hideSecret)
	args := hideMovedArgs(p, iso, home, hideMovedConfig([]hideConf{conf}), c.proxy)
	from := p.path(c.from)
	move := fmt.Sprintf("mv %s %s.moved && echo moved", sh.Quote(from), sh.Quote(from))
	if variant != "rename" {
		move += fmt.Sprintf(" && ln -s %s %s && echo linked", sh.Quote(from+".gone"), sh.Quote(from))
	}
	r := run(t, p.dir, nil, "", append(args, "--", "/bin/sh", "-c", move+"; true")...)
	if refusesAnchors(iso) {
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
