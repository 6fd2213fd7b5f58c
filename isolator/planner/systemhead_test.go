package planner

import (
	"fmt"
	"io/fs"
	"reflect"
	"sync"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/sockdir"
	"github.com/devsandbox/devsandbox/tools"
)

// TestSystemHead: Build uses the system view worked out ahead only when the
// configuration asks for the default view with the same snapshot root; then is
// called with that view before Wait returns.
func TestSystemHead(t *testing.T) {
	f := newFixture(t)
	fake := t.TempDir() // a host whose default view differs from the real one
	mkdirs(t, fake+"/usr", fake+"/opt/x")
	writeFile(t, fake+"/etc/hosts", "")
	cfg := f.load(t)
	aheadView, err := systemView(chrootProbe(fake), nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	own, _ := f.build(t, cfg)
	if reflect.DeepEqual(own.System.Paths, aheadView.Paths) {
		t.Fatal("the fake host's view is the real one's: the test shows nothing")
	}
	for _, tc := range []struct {
		name      string
		stateHome string
		binds     []string
		used      bool
	}{
		{"the default view", cfg.Host.StateHome, nil, true},
		{"system_binds set", cfg.Host.StateHome, []string{"/usr"}, false},
		{"another state directory", cfg.Host.StateHome + "2", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var handed []isolator.SystemView
			head := StartSystem(chrootProbe(fake), tc.stateHome, func(v isolator.SystemView) { handed = append(handed, v) })
			c := *cfg
			c.Sandbox.SystemBinds = tc.binds
			p, _, err := Build(&c, tools.Default(), probe(f.proj), Request{Command: []string{"true"}, System: head})
			if err != nil {
				t.Fatal(err)
			}
			head.Wait()
			if len(handed) != 1 || !reflect.DeepEqual(handed[0].Paths, aheadView.Paths) {
				t.Errorf("then was handed %+v, want the view once", handed)
			}
			if used := reflect.DeepEqual(p.System.Paths, aheadView.Paths); used != tc.used {
				t.Errorf("the view ahead used: %v, want %v (%+v)", used, tc.used, p.System.Paths)
			}
		})
	}
}

// TestLoadDirAhead: LoadDir starts the default system view when bwrap may run it, and
// Build takes it from the Probe with its stat cache. The Plan is the same as without
// it; only the first Build takes it; a configuration that runs no bwrap, or asks for
// another view, starts nothing.
func TestLoadDirAhead(t *testing.T) {
	f := newFixture(t)
	mkdirs(t, f.home+"/.config/gh", f.proj+"/.git/hooks")
	writeFile(t, f.home+"/.gitconfig", "[user]\n")
	writeFile(t, f.proj+"/.env", "X=1\n")
	load := func(t *testing.T, extra ...string) *Loaded {
		t.Helper()
		l, err := LoadDir(f.proj, config.Flags{}, append(append([]string(nil), f.environ...), extra...), tools.Default())
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	fixed := func(pr Probe) Probe { // as probe(): no tool found through the machine running the test
		pr.Executable = func() (string, error) { return selfPath, nil }
		pr.LookPath = func(string) bool { return false }
		pr.SocketDir = func(sockdir.Host, string, string) (string, error) { return "/run/sock", nil } // else random
		return pr
	}
	same := func(t *testing.T, what string, got, want *isolator.Plan) {
		t.Helper()
		if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want); g != w {
			i := 0
			for i < len(g) && i < len(w) && g[i] == w[i] {
				i++
			}
			t.Errorf("%s: the Plans differ from byte %d:\n%.300s\nagainst\n%.300s", what, i, g[i:], w[i:])
		}
	}
	build := func(t *testing.T, l *Loaded, pr Probe) *isolator.Plan {
		t.Helper()
		p, _, err := Build(l.Config, tools.Default(), pr, Request{Command: []string{"true"}, Session: "s"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	l := load(t)
	if l.System == nil || l.Probe.head != l.System {
		t.Fatal("LoadDir started no system view for the default configuration")
	}
	var handed []isolator.SystemView
	l.System.Then(func(v isolator.SystemView) { handed = append(handed, v) })
	ahead := build(t, l, fixed(l.Probe))
	l.System.Wait()
	// The bwrap backend keeps the Plan's Passwd in the /etc snapshot it opens with
	// the view handed on: the head guesses the same one (the fixture's HOME is not
	// the one /etc/passwd names for the user running the test).
	if ahead.System.Passwd == nil {
		t.Error("the Plan has no Passwd of its own: the test shows nothing of the guess")
	}
	if len(handed) != 1 {
		t.Errorf("then was handed %d views, want 1", len(handed))
	} else if string(handed[0].Passwd) != string(ahead.System.Passwd) {
		t.Errorf("then was handed the view with Passwd %q; the Plan's is %q", handed[0].Passwd, ahead.System.Passwd)
	}
	if !l.System.taken {
		t.Fatal("Build did not take the view started ahead")
	}
	if _, ok := l.System.stats.l.Load(f.proj); !ok {
		t.Error("Build asked about the project through a cache of its own, not the head's")
	}
	own := fixed(l.Probe)
	own.head = nil
	same(t, "without the view ahead", build(t, l, own), ahead)
	asked := l.System.stats.lstats()
	same(t, "a second Build from the same Loaded", build(t, l, fixed(l.Probe)), ahead)
	if l.System.stats.lstats() != asked {
		t.Error("a second Build used the head's cache: its answers are older than that Build")
	}

	// Another backend named by a flag or the environment: nothing is started.
	docker, bw := "docker", "bwrap"
	h := l.Config.Host
	for _, tc := range []struct {
		flags config.Flags
		env   string
		start bool
	}{
		{config.Flags{}, "", true},
		{config.Flags{}, "docker", false},
		{config.Flags{Isolator: &docker}, "bwrap", false},
		{config.Flags{Isolator: &bw}, "docker", true},
	} {
		h.Vars = map[string]string{config.IsolatorVar: tc.env}
		head := startAhead(tc.flags, h, l.Probe)
		head.Wait()
		if (head != nil) != tc.start {
			t.Errorf("flags %+v, %s=%q: started %v, want %v", tc.flags, config.IsolatorVar, tc.env, head != nil, tc.start)
		}
	}
	if l := load(t, "DEVSANDBOX_ISOLATOR=docker"); l.System != nil {
		t.Error("isolator = docker: a system view was handed to Build")
	}
	// Another backend or view named by a file: the view is not handed on.
	for _, file := range []string{"isolator = \"docker\"\n", "[sandbox]\nsystem_binds = [\"host\"]\n"} {
		writeFile(t, f.home+"/.config/devsandbox/config.toml", file)
		if l := load(t); l.System != nil || l.Probe.head != nil {
			t.Errorf("%q: the default view was handed to Build", file)
		}
	}
}

// TestSystemHeadNotDone: when the head has not worked the view out by the time Build
// needs it (its goroutine held here in its first lstat), Build works it out itself
// with the head's Probe rather than wait, and makes the same Plan.
func TestSystemHeadNotDone(t *testing.T) {
	f := newFixture(t)
	fake := t.TempDir()
	mkdirs(t, fake+"/usr", fake+"/opt/x")
	writeFile(t, fake+"/etc/hosts", "")
	cfg := f.load(t)
	want, err := systemView(chrootProbe(fake), nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	pr := chrootProbe(fake)
	gate, first := make(chan struct{}), make(chan struct{})
	var once sync.Once
	lstat := pr.Lstat
	pr.Lstat = func(p string) (fs.FileInfo, error) {
		held := false
		once.Do(func() { held = true })
		if held { // the head's first call
			close(first)
			<-gate
		}
		return lstat(p)
	}
	head := StartSystem(pr, cfg.Host.StateHome, nil)
	<-first
	p, _, err := Build(cfg, tools.Default(), probe(f.proj), Request{Command: []string{"true"}, System: head})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-head.ready:
		t.Fatal("the head finished while held")
	default:
	}
	close(gate)
	head.Wait()
	if !reflect.DeepEqual(p.System.Paths, want.Paths) {
		t.Errorf("Build's view %+v, want the head Probe's %+v", p.System.Paths, want.Paths)
	}
	if !reflect.DeepEqual(head.view.Paths, want.Paths) {
		t.Errorf("the head's view %+v, want %+v", head.view.Paths, want.Paths)
	}
}
