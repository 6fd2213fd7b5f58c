//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// forged is the line a name tries to pass off as devsandbox's own.
const forged = "DEVSANDBOX: all clear"

// assertNoForgedLine fails when a line of out starts with what a name a sandbox chose
// put after its newline (or carriage return): the name has started a line of its own.
func assertNoForgedLine(t *testing.T, what, out string) {
	t.Helper()
	for _, l := range strings.FieldsFunc(out, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if strings.HasPrefix(l, forged) {
			t.Errorf("%s printed a line a name forged: %q\n%s", what, l, out)
			return
		}
	}
}

// TestNamesCannotStartALine: a name a sandbox chose that holds a newline, a carriage
// return, a line separator or a bidi override (a directory holding a toolchain file,
// a second link to a masked .env) reaches devsandbox's messages at the end of the run
// that made it and at the next launch, and the --dry-run script. Each must show as
// its escapes on the line it belongs to, never start a line of its own
// ("DEVSANDBOX: all clear") or reorder what is shown. Before, the newline was kept.
func TestNamesCannotStartALine(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		r := run(t, p.dir, nil, "", "--isolator="+iso, "--", "/bin/sh", "-c", `exec >/dev/null 2>&1
			NL='
'
			CR=$(printf '\015') LS=$(printf '\342\200\250') RLO=$(printf '\342\200\256')
			d="t${NL}`+forged+`${LS}${RLO}x"
			mkdir "$d" && echo '[toolchain]' > "$d/rust-toolchain.toml"
			echo 'KEY=placeholder' > .env && ln .env "h${CR}`+forged+`${NL}"
			true`)
		if r.code != 0 {
			t.Fatalf("the planting run failed:\n%s", r)
		}
		assertNoControls(t, "the planting run", r.stderr)
		assertNoForgedLine(t, "the planting run", r.stderr)
		if want := `t\x0a` + forged + `\u2028\u202ex/rust-toolchain.toml`; !strings.Contains(r.stderr, want) {
			t.Errorf("no message shows %s:\n%s", want, r.stderr)
		}

		r = p.sandbox(iso, nil, "true")
		if r.code != 125 || !strings.Contains(r.stderr, "has 2 links") {
			t.Fatalf("the next launch did not refuse the linked .env:\n%s", r)
		}
		assertNoControls(t, "the next launch", r.stderr)
		assertNoForgedLine(t, "the next launch", r.stderr)
		if want := `h\x0d` + forged + `\x0a`; !strings.Contains(r.stderr, want) {
			t.Errorf("the refusal does not show %s:\n%s", want, r.stderr)
		}

		// --dry-run: the script quotes the newline so that it still runs (the
		// printf covers the character after it, which the shell would otherwise
		// strip as trailing), and no line of it starts with what the name forged.
		if err := os.Remove(p.path("proj/h\r" + forged + "\n")); err != nil {
			t.Fatal(err)
		}
		r = run(t, p.dir, nil, "", "--isolator="+iso, "--dry-run", "--", "true")
		if r.code != 0 {
			t.Fatalf("--dry-run:\n%s", r)
		}
		assertNoControls(t, "--dry-run", r.stdout+r.stderr)
		assertNoForgedLine(t, "--dry-run", r.stdout+r.stderr)
		if want := `/t'"$(printf '\012\104')"'EVSANDBOX: all clear'"$(printf '\342\200\250\342\200\256')"'x/rust-toolchain.toml'`; !strings.Contains(r.stdout, want) {
			t.Errorf("--dry-run does not quote the toolchain file as %s:\n%s", want, r.stdout)
		}
	})
}

// hostileName is a project directory's name that tries every way a name acts on a
// terminal: OSC (title), C1 CSI, a bidi override, and a newline forging a line.
const hostileName = "p\x1b]0;owned\a\u009b2K\u202e\n" + forged

// TestListingsEscapeNames: a project's path is chosen by whoever named its directory
// (a repository cloned under its own name, a directory a sandbox made that the user
// later runs devsandbox in), and becomes the sandbox's name; `sandboxes list`, its
// --json, `prune --dry-run`, `rm`, `doctor`, `config show` and `tools list` print it.
// None may print it raw: every control and bidi character shows as its escape, a
// newline never starts a line, and JSON writes them as \u escapes. Before, each
// printed the name as it is.
func TestListingsEscapeNames(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		dir := filepath.Join(p.root, hostileName)
		p.mkdir(hostileName + "/.git")
		p.write(hostileName+"/.git/HEAD", "ref: refs/heads/main\n")
		t.Cleanup(func() { p.forget(dir) })
		name := projectName(dir)
		check := func(what string, r result) {
			t.Helper()
			assertNoControls(t, what, r.stdout+r.stderr)
			assertNoForgedLine(t, what, r.stdout+r.stderr)
		}
		r := run(t, dir, nil, "", "--isolator="+iso, "--", "true")
		check("the run", r)
		switch {
		case r.code == 0:
		case iso != "bwrap" && r.code == 125 && (strings.Contains(r.stderr, "invalid characters") || strings.Contains(r.stderr, "names must match")):
			// Docker and podman take only [a-zA-Z0-9_.-] in a volume's or a
			// container's name, and devsandbox names them after the project: the run
			// is refused (its message escaped, checked above); its state is still
			// listed.
		default:
			t.Fatalf("a run in %q failed:\n%s", dir, r)
		}
		env := []string{"DOCKER_HOST=" + engineOf(iso)}
		r = run(t, p.root, env, "", "sandboxes", "list")
		check("sandboxes list", r)
		if want := `p\x1b]0;owned\x07\u009b2K\u202e\x0a` + forged + "-"; !strings.Contains(r.stdout, want) {
			t.Errorf("sandboxes list does not show %s:\n%s", want, r.stdout)
		}
		r = run(t, p.root, env, "", "sandboxes", "list", "--json")
		check("sandboxes list --json", r)
		var list []struct{ Name, Dir string }
		if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
			t.Fatalf("sandboxes list --json: %v\n%s", err, r)
		}
		if !slices.ContainsFunc(list, func(s struct{ Name, Dir string }) bool { return s.Name == name }) {
			t.Errorf("sandboxes list --json does not hold the name %q:\n%s", name, r.stdout)
		}
		for _, want := range []string{`\u009b`, `\u202e`, `\n`} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("sandboxes list --json does not escape as %s:\n%s", want, r.stdout)
			}
		}
		// A trusted project file: config show names it in its comments.
		p.write(hostileName+"/.devsandbox.toml", "[sandbox]\nread_only = false\n")
		r = run(t, dir, env, "", "config", "trust")
		check("config trust", r)
		if r.code != 0 || !strings.Contains(r.stdout, `trusted `+filepath.Dir(dir)+`/p\x1b]0;owned`) {
			t.Errorf("config trust:\n%s", r)
		}
		for _, args := range [][]string{{"doctor"}, {"config", "show"}, {"config", "show", "--json"}, {"tools", "list"}, {"tools", "list", "--json"}} {
			r = run(t, dir, env, "", args...)
			check(strings.Join(args, " "), r)
		}
		r = run(t, p.root, env, "", "sandboxes", "prune", "--dry-run", "--days", "0")
		check("sandboxes prune --dry-run", r)
		r = run(t, p.root, env, "", "sandboxes", "rm", name, "no\x1b[2Kne\n"+forged)
		check("sandboxes rm", r)
		if !strings.Contains(r.stdout, `removed p\x1b]0;owned`) {
			t.Errorf("sandboxes rm did not say it removed %q:\n%s", name, r)
		}
	})
}

// TestListWalkBounded: a sandbox plants a wide tree (200,000 entries) and a deep one
// in its home; `sandboxes list` walks the home for its size. It must finish in a
// bounded time, say that the size is a lower bound, and still list every project.
// Before, it walked every entry.
func TestListWalkBounded(t *testing.T) {
	forEachIsolatorOf(t, []string{"bwrap"}, func(t *testing.T, iso string) {
		p := newProject(t)
		p.mustSandbox(iso, nil, `cd "$HOME" && mkdir wide && cd wide &&
			i=0; while [ $i -lt 200 ]; do mkdir d$i && (cd d$i && seq 1000 | xargs touch); i=$((i+1)); done &&
			cd "$HOME" && d=deep; i=0; while [ $i -lt 300 ]; do mkdir $d && cd $d; i=$((i+1)); done && echo x > leaf`)
		other := newProject(t)
		other.mustSandbox(iso, nil, `echo hello > "$HOME/f"`)
		start := time.Now()
		r := run(t, p.root, nil, "", "sandboxes", "list", "--json")
		took := time.Since(start)
		t.Logf("sandboxes list --json took %v", took)
		var list []struct {
			Name          string
			HomeSize      int64
			HomeSizeBound bool
		}
		if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
			t.Fatalf("sandboxes list --json: %v\n%s", err, r)
		}
		found := 0
		for _, s := range list {
			switch s.Name {
			case p.name():
				found++
				if !s.HomeSizeBound {
					t.Errorf("the home of %s (200,000 entries) is not marked a lower bound: %+v", s.Name, s)
				}
			case other.name():
				found++
				if s.HomeSizeBound || s.HomeSize == 0 {
					t.Errorf("the small home of %s: %+v", s.Name, s)
				}
			}
		}
		if found != 2 {
			t.Errorf("sandboxes list --json does not list both projects:\n%s", r.stdout)
		}
		if took > 10*time.Second {
			t.Errorf("sandboxes list took %v over a planted tree", took)
		}
		r = run(t, p.root, nil, "", "sandboxes", "list")
		if !strings.Contains(r.stdout, "≥") {
			t.Errorf("sandboxes list does not say the size is a lower bound:\n%s", r.stdout)
		}
	})
}
