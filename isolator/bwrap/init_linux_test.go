package bwrap_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/bwrap"
)

// With Plan.BwrapInit set, bwrap runs it as the sandbox's pid 1 in Self's place:
// bound at InitPath unless the sandbox provably shows that very file at its host
// path (in a system directory bound read-only, nothing of the plan over it, reached
// on the host without a link or a mount crossing), where it runs in place.
func TestRenderBwrapInit(t *testing.T) {
	const inUsr = "/usr/libexec/devsandbox/devsandbox-bwrap-init"
	yes := func(string, string) bool { return true }
	no := func(string, string) bool { return false }
	for _, c := range []struct {
		name, bwrapInit string
		plan            func(p *isolator.Plan)
		initAt          func(dir, init string) bool
		inView          bool
	}{
		{"outside the view", "/home/u/.local/bin/devsandbox-bwrap-init", nil, yes, false},
		{"in the view", inUsr, nil, yes, true},
		{"in the view, not looked at on the host", inUsr, nil, nil, false},
		// Attack: /usr/libexec/devsandbox/devsandbox-bwrap-init is a link (or a
		// directory on the way is), whose target the sandbox resolves in its own
		// view: its home, which a run before it wrote.
		{"in the view, reached through a link", inUsr, nil, no, false},
		// Attack: a host mount of a directory the sandbox writes, over the init's.
		{"under a writable bind", inUsr, func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: "/home/u/planted", Dest: "/usr/libexec/devsandbox", Why: "sandbox.host_mounts"})
		}, yes, false},
		{"under a read-only bind of another directory", inUsr, func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: "/home/u/x", Dest: "/usr/libexec", ReadOnly: true, Why: "sandbox.host_mounts"})
		}, yes, false},
		{"under a tmpfs", inUsr, func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.TmpDir, Dest: "/usr/libexec", Why: "tool tmpfs"})
		}, yes, false},
		{"over it", inUsr, func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Data, Dest: inUsr, Content: []byte("#!/bin/sh\n"), Why: "generated"})
		}, yes, false},
		// Attack: a system bind under /tmp, which the session /tmp covers.
		{"under a system bind the session /tmp covers", "/tmp/tools/devsandbox-bwrap-init", func(p *isolator.Plan) {
			p.System.Paths = append(slices.Clone(p.System.Paths), isolator.SystemPath{Path: "/tmp/tools"})
		}, yes, false},
		{"beside a bind", inUsr, func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: "/home/u/x", Dest: "/usr/libexec/other", Why: "sandbox.host_mounts"})
		}, yes, true},
		{"under a system bind below another", inUsr, func(p *isolator.Plan) {
			p.System.Paths = append(slices.Clone(p.System.Paths), isolator.SystemPath{Path: "/usr/libexec/devsandbox"})
		}, yes, true},
		{"in the proxy modes (ssh's ProxyCommand runs InitPath)", inUsr, func(p *isolator.Plan) {
			p.Egress = egress.Rules{Mode: egress.Proxy, Proxy: egress.Endpoint{Unix: "/home/u/.local/state/devsandbox/app-1/proxy-s1.sock"}}
		}, yes, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := basePlan()
			p.System.Paths = minimalSystem
			p.Self = "/home/u/.local/bin/devsandbox-init"
			p.BwrapInit = c.bwrapInit
			if c.plan != nil {
				c.plan(p)
			}
			var asked []string
			initAt := c.initAt
			if initAt != nil {
				initAt = func(dir, init string) bool {
					asked = append(asked, dir, init)
					return c.initAt(dir, init)
				}
			}
			spec, err := bwrap.RenderInitAt(p, initAt)
			if err != nil {
				t.Fatal(err)
			}
			a := spec.Argv
			if slices.Contains(a, p.Self) {
				t.Errorf("argv names Self %s, not BwrapInit: %q", p.Self, a)
			}
			run := slices.Index(a, "--as-pid-1")
			if run < 0 {
				t.Fatalf("no --as-pid-1 in %q", a)
			}
			end := slices.Index(a, "--")
			if end < 0 || end+1 >= len(a) {
				t.Fatalf("no command in %q", a)
			}
			bound := false
			for i := 0; i+2 < end; i++ {
				bound = bound || (a[i] == "--ro-bind" && a[i+1] == c.bwrapInit && a[i+2] == bwrap.InitPath)
			}
			switch {
			case c.inView && (a[end+1] != c.bwrapInit || slices.Contains(a, bwrap.InitPath)):
				t.Errorf("the init in the view is not run in place: %q", a)
			case !c.inView && (!bound || a[end+1] != bwrap.InitPath):
				t.Errorf("the init is not bound at and run as %s: %q", bwrap.InitPath, a)
			}
			if c.inView && (len(asked) != 2 || asked[1] != c.bwrapInit || !isolator.Within(c.bwrapInit, asked[0])) {
				t.Errorf("the host was asked about %q, not about the init below its system directory", asked)
			}
		})
	}
}

// initReachable: the init runs in place only when its system directory leads to it
// without a link (whose target the sandbox resolves in its own view) and is an
// executable regular file.
func TestInitReachable(t *testing.T) {
	root := t.TempDir()
	sys := filepath.Join(root, "usr")
	bin := filepath.Join(sys, "local", "bin")
	elsewhere := filepath.Join(root, "home", "u", "bin")
	for _, d := range []string{bin, elsewhere} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path string, mode os.FileMode) {
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(bin, "init"), 0o755)
	write(filepath.Join(bin, "plain"), 0o644)
	write(filepath.Join(elsewhere, "init"), 0o755)
	if err := os.Symlink(filepath.Join(elsewhere, "init"), filepath.Join(bin, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("init", filepath.Join(bin, "relative")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(sys, "lbin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("local/bin", filepath.Join(sys, "rbin")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir, init string
		want      bool
	}{
		{sys, filepath.Join(bin, "init"), true},
		{bin, filepath.Join(bin, "init"), true},
		{sys, filepath.Join(bin, "plain"), false},                  // not executable
		{sys, filepath.Join(bin, "missing"), false},                // not there
		{sys, bin, false},                                          // a directory
		{sys, filepath.Join(bin, "linked"), false},                 // a link out of the directory
		{sys, filepath.Join(bin, "relative"), false},               // a link, even to a file beside it
		{sys, filepath.Join(sys, "lbin", "init"), false},           // a linked directory on the way
		{sys, filepath.Join(sys, "rbin", "init"), false},           // a link within the directory on the way
		{sys, filepath.Join(sys, "local", "..", "..", "x"), false}, // not below it
		{bin, filepath.Join(elsewhere, "init"), false},             // not below it
		{sys, sys, false},
	} {
		if got := bwrap.InitReachable(c.dir, c.init); got != c.want {
			t.Errorf("initReachable(%s, %s) = %v, want %v", c.dir, c.init, got, c.want)
		}
	}
}
