package gitconfig

import (
	"errors"
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	doc := "\xef\xbb\xbf# comment\n" +
		"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tFSMonitor = \"touch x; false\" # run\n" +
		"[remote \"Origin\"]\n\turl = /src/x.git\n" +
		"[Branch.Main] remote = origin\n" + // old-style subsection, variable on the header line
		"[alias]\n\tst = \"!echo \\\"a\\\\b\\\"\"   ; comment\n" +
		"[include]\n\tpath = ../a\\\n.cfg\n" + // a continuation line
		"[user]\n\tname = A  B  \n\tflag\n"
	got, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Section: "core", Name: "repositoryformatversion", Value: "0"},
		{Section: "core", Name: "bare", Value: "false"},
		{Section: "core", Name: "fsmonitor", Value: "touch x; false"},
		{Section: "remote", Sub: "Origin", Name: "url", Value: "/src/x.git"},
		{Section: "branch", Sub: "main", Name: "remote", Value: "origin"},
		{Section: "alias", Name: "st", Value: `!echo "a\b"`},
		{Section: "include", Name: "path", Value: "../a.cfg"},
		{Section: "user", Name: "name", Value: "A  B"},
		{Section: "user", Name: "flag", Bool: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse:\n got %+v\nwant %+v", got, want)
	}
	if v := Values(got, "Core.FSMonitor"); !reflect.DeepEqual(v, []string{"touch x; false"}) {
		t.Errorf("Values: %q", v)
	}
	if v := Values(got, "remote.Origin.url"); !reflect.DeepEqual(v, []string{"/src/x.git"}) {
		t.Errorf("Values with a subsection: %q", v)
	}
	for _, bad := range []string{"x = 1\n", "[core\n", "[core]\n\ta = \"open\n", "[core]\n\ta = \\q\n", "[a.b \"c\"]\n", "[core]\n\t= 1\n"} {
		if _, err := Parse([]byte(bad)); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q): %v, want ErrSyntax", bad, err)
		}
	}
}

// What git writes for ordinary work is safe; anything naming a program is not, nor a
// core.worktree out of the project.
func TestUnsafe(t *testing.T) {
	c := Checker{Worktree: func(v string) bool { return v == "../../../sub" }}
	before, _ := Parse([]byte("[core]\n\tbare = false\n[alias]\n\tco = checkout\n"))
	now, _ := Parse([]byte("[core]\n\tbare = false\n\tworktree = ../../../sub\n" +
		"[alias]\n\tco = checkout\n" + // the user's own, unchanged: not the sandbox's
		"[remote \"origin\"]\n\turl = https://example.test/x.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n" +
		"[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n" +
		"[submodule \"s\"]\n\tupdate = rebase\n\tactive = true\n"))
	if bad := c.Unsafe(before, now); len(bad) != 0 {
		t.Fatalf("ordinary work called unsafe: %+v", bad)
	}
	for _, doc := range []string{
		"[core]\n\tfsmonitor = x\n", "[core]\n\thooksPath = h\n", "[core]\n\tsshCommand = x\n",
		"[alias]\n\tst = !x\n", "[include]\n\tpath = x\n", "[includeIf \"gitdir:/\"]\n\tpath = x\n",
		"[filter \"lfs\"]\n\tclean = x\n", "[diff \"x\"]\n\ttextconv = x\n", "[url \"x\"]\n\tinsteadOf = y\n",
		"[credential]\n\thelper = x\n", "[submodule \"s\"]\n\tupdate = !x\n", "[remote \"o\"]\n\turl = ext::sh -c x\n",
		"[core]\n\tworktree = /home/u/.config\n", "[remote \"o\"]\n\tuploadpack = x\n",
	} {
		now, err := Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if bad := c.Unsafe(nil, now); len(bad) != 1 {
			t.Errorf("%q: unsafe %+v, want its one variable", doc, bad)
		}
	}
}
