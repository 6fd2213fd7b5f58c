package bwrap_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/bwrap"
	"github.com/devsandbox/devsandbox/isolator/etcsnap"
	"github.com/devsandbox/devsandbox/isolator/planner"
)

// snapshotPlan is a default view with /etc copies and binds, snapshotted.
func snapshotPlan() *isolator.Plan {
	p := basePlan()
	p.System.Paths = slices.Clone(minimalSystem)
	p.System.Snapshot = etcSnapshots
	return p
}

func TestEtcEntries(t *testing.T) {
	want := []etcsnap.Entry{
		{Name: "resolv.conf", Source: "/etc/resolv.conf"},
		{Name: "passwd", Source: "/etc/passwd"},
		{Name: "ssl", Source: "/etc/ssl", Tree: true},
	}
	// A mount inside /etc/ssl needs its mount point: the directory is bound.
	sslBound := slices.Clone(want)
	sslBound[2] = etcsnap.Entry{Name: "ssl", Dir: true}
	for _, tc := range []struct {
		name string
		edit func(p *isolator.Plan)
		want []etcsnap.Entry // nil: no snapshot, the files are copied
	}{
		{"default view", func(*isolator.Plan) {}, want},
		{"a file mounted over a copy", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Data, Dest: "/etc/passwd", Content: []byte("x")})
		}, want},
		{"a mask inside a bound /etc directory", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.MaskDir, Dest: "/etc/ssl/private"})
		}, sslBound},
		{"a mask over a bound /etc directory", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.MaskDir, Dest: "/etc/ssl"})
		}, sslBound},
		{"no snapshot root", func(p *isolator.Plan) { p.System.Snapshot = "" }, nil},
		{"host view", func(p *isolator.Plan) { p.System.Host = true }, nil},
		{"nothing copied", func(p *isolator.Plan) { p.System.Paths = minimalSystem[:4] }, nil},
		{"root inside the project", func(p *isolator.Plan) { p.System.Snapshot = project + "/.state/etc" }, nil},
		{"root inside the sandbox home", func(p *isolator.Plan) { p.System.Snapshot = sandboxHome + "/etc" }, nil},
		{"root inside a read-write bind", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: "/home/u/.local/state", Dest: "/home/u/.local/state"})
		}, nil},
		{"root holding the session /tmp", func(p *isolator.Plan) { p.Tmp.Dir = etcSnapshots + "/tmp" }, nil},
		{"a file generated where the snapshot has nothing", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Data, Dest: "/etc/devsandbox.conf", Content: []byte("x")})
		}, nil},
		{"a directory mask over a copied file", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.MaskDir, Dest: "/etc/passwd"})
		}, nil},
		{"a host bind into /etc", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: "/srv/x", Dest: "/etc/ssl2", ReadOnly: true})
		}, nil},
		{"/etc itself in the view", func(p *isolator.Plan) {
			p.System.Paths = append(p.System.Paths, isolator.SystemPath{Path: "/etc"})
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := snapshotPlan()
			tc.edit(p)
			got, ok := bwrap.EtcEntries(p)
			if ok != (tc.want != nil) || !reflect.DeepEqual(got, tc.want) && tc.want != nil {
				t.Errorf("etcEntries = %+v, %v; want %+v", got, ok, tc.want)
			}
			spec, err := bwrap.Render(p)
			if err != nil {
				t.Fatal(err)
			}
			if ok { // Run hands render the entries of the snapshot it opened
				given, worked, err := bwrap.RenderSnapshot(p, got)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(given, worked) {
					t.Errorf("rendered with the entries given:\n%+v\nworked out:\n%+v", given, worked)
				}
			}
			if snap := slices.Contains(spec.Argv, "--ro-bind-fd") && slices.Contains(spec.Argv, "/etc"); snap != ok {
				t.Errorf("Render mounts a snapshot: %v; want %v\n%v", snap, ok, spec.Argv)
			}
		})
	}
}

// When Run cannot open a snapshot, the rendering is the one without a snapshot:
// the same files, each copied.
func TestRenderCopyingFallback(t *testing.T) {
	withSnap := snapshotPlan()
	got, err := bwrap.RenderCopying(withSnap)
	if err != nil {
		t.Fatal(err)
	}
	without := snapshotPlan()
	without.System.Snapshot = ""
	want, err := bwrap.Render(without)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Argv, want.Argv) || !reflect.DeepEqual(seccompElided(t, got), seccompElided(t, want)) {
		t.Errorf("fallback:\n got %q\nwant %q", got.Argv, want.Argv)
	}
	if !slices.Contains(got.Argv, "--file") {
		t.Error("the fallback copies nothing")
	}
}

// Run opens the snapshot for the Plan as built, on another goroutine, while it pins
// the sources; pinning drops optional mounts whose source is gone. The snapshot Run
// uses is the one the pinned Plan calls for, whichever Plan it was opened for.
func TestEtcSnapshotAfterPinning(t *testing.T) {
	optionalInEtc := isolator.Mount{Kind: isolator.Bind, Source: "/srv/gone", Dest: "/etc/ssl2", ReadOnly: true, Optional: true}
	for _, tc := range []struct {
		name     string
		built    func(p *isolator.Plan) // the Plan as built, before pinning
		pinned   func(p *isolator.Plan) // what pinning left of it
		snapshot bool
	}{
		{"no mount dropped", func(*isolator.Plan) {}, func(*isolator.Plan) {}, true},
		{"an optional bind into /etc dropped", func(p *isolator.Plan) { p.Mounts = append(p.Mounts, optionalInEtc) },
			func(p *isolator.Plan) {}, true},
		{"nothing copied either way", func(p *isolator.Plan) { p.System.Paths = minimalSystem[:4] },
			func(p *isolator.Plan) { p.System.Paths = minimalSystem[:4] }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir() + "/etc"
			p, pp := snapshotPlan(), snapshotPlan()
			p.System.Snapshot, pp.System.Snapshot = root, root
			tc.built(p)
			tc.pinned(pp)
			s, entries, notes := bwrap.StartEtc(p, pp, nil)
			if (s != nil) != tc.snapshot {
				t.Fatalf("snapshot opened: %v, want %v (%v)", s != nil, tc.snapshot, notes)
			}
			if s == nil {
				return
			}
			defer s.Close()
			want, _ := bwrap.EtcEntries(pp)
			key, err := etcsnap.Key(want, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if s.Key != key {
				t.Errorf("the snapshot is keyed %s, the pinned Plan's entries %s", s.Key, key)
			}
			if !held(entries, want) || !reflect.DeepEqual(entries, s.Entries) {
				t.Errorf("render is handed %+v, the pinned Plan's entries are %+v, the snapshot holds %+v", entries, want, s.Entries)
			}
			// --debug says when a launch built its snapshot, and only then.
			built := func(notes []string) bool {
				return slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "was built for this launch") })
			}
			if !built(notes) {
				t.Errorf("the first launch's notes do not say it built the snapshot: %q", notes)
			}
			again, _, notes := bwrap.StartEtc(pp, pp, nil)
			if again == nil || again.Built || built(notes) {
				t.Errorf("the second launch: snapshot %v, notes %q", again, notes)
			}
			if again != nil {
				again.Close()
			}
		})
	}
}

// TestEtcHead: the /etc snapshot opened ahead of the Plan (PrestartEtc) is used only
// for a Plan whose snapshot has the same root and exactly the same entries; for any
// other the Plan's own is opened, as without a head start.
func TestEtcHead(t *testing.T) {
	passwd := func(home string) []byte { return []byte("u:x:1000:1000::" + home + ":/bin/sh\n") }
	for _, tc := range []struct {
		name string
		edit func(p *isolator.Plan) // the Plan as built, from the default view
		used bool
		// ahead is the Passwd the head guessed; host: the head's snapshot holds the
		// host's /etc/passwd, over which render binds the Plan's.
		ahead []byte
		host  bool
	}{
		{"the default view", func(*isolator.Plan) {}, true, nil, false},
		{"the sandbox's /etc/passwd guessed", func(p *isolator.Plan) { p.System.Passwd = passwd("/tmp/h") }, true, passwd("/tmp/h"), false},
		// env.set HOME: the head guessed none, from the host's HOME.
		{"the sandbox's /etc/passwd, none guessed", func(p *isolator.Plan) { p.System.Passwd = passwd("/tmp/h") }, true, nil, true},
		{"the sandbox's /etc/passwd, another guessed", func(p *isolator.Plan) { p.System.Passwd = passwd("/tmp/h") }, false, passwd("/tmp/g"), false},
		{"none, one guessed", func(*isolator.Plan) {}, false, passwd("/tmp/g"), false},
		// The head start copies /etc/ssl whole; a mask inside it needs it bound.
		{"a mask inside a bound /etc directory", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.MaskDir, Dest: "/etc/ssl/private"})
		}, false, nil, false},
		{"a file fewer", func(p *isolator.Plan) {
			p.System.Paths = slices.DeleteFunc(p.System.Paths, func(sp isolator.SystemPath) bool { return sp.Path == "/etc/passwd" })
		}, false, nil, false},
		{"another snapshot root", func(p *isolator.Plan) { p.System.Snapshot += "2" }, false, nil, false},
		{"an /etc entry bound from elsewhere", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: "/srv/x", Dest: "/etc/hosts", ReadOnly: true})
		}, false, nil, false},
		{"the snapshot root writable", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: p.System.Snapshot, Dest: "/srv/etc"})
		}, false, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir() + "/etc"
			ahead := snapshotPlan()
			ahead.System.Snapshot = root
			ahead.System.Passwd = tc.ahead
			head := bwrap.PrestartEtc(ahead.System)
			if head == nil {
				t.Fatal("no head start for the default view")
			}
			defer head.Close()
			headSnap := bwrap.HeadSnapshot(head)
			if headSnap == nil {
				t.Fatal("the head start opened no snapshot")
			}
			p := snapshotPlan()
			p.System.Snapshot = root
			tc.edit(p)
			s, entries, notes := bwrap.StartEtc(p, p, head)
			if s != nil {
				defer s.Close()
			}
			if used := s != nil && s == headSnap; used != tc.used {
				t.Fatalf("head start used: %v, want %v (%v)", used, tc.used, notes)
			}
			want, ok := bwrap.EtcEntriesPasswd(p, !tc.host)
			if !ok {
				want = nil
			}
			if !held(entries, want) || s != nil && !reflect.DeepEqual(entries, s.Entries) {
				t.Errorf("render is handed %+v, the Plan's entries are %+v", entries, want)
			}
			if s != nil {
				key, err := etcsnap.Key(want, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				if s.Key != key {
					t.Errorf("the snapshot is keyed %s, the Plan's entries %s", s.Key, key)
				}
			}
		})
	}
}

// fakeAhead is a system view worked out ahead (planner.SystemHead) that is ready at
// once.
type fakeAhead struct {
	v    isolator.SystemView
	done chan struct{}
}

func (f *fakeAhead) Then(fn func(isolator.SystemView)) {
	go func() {
		defer close(f.done)
		fn(f.v)
	}()
}

func (f *fakeAhead) Wait() { <-f.done }

// TestEtcAhead: EtcAhead opens the snapshot of the view worked out ahead, and Run
// uses it for a Plan with that view; with no view ahead (a nil planner.SystemHead)
// it holds nothing and Run opens the Plan's own.
func TestEtcAhead(t *testing.T) {
	root := t.TempDir() + "/etc"
	ahead := snapshotPlan()
	ahead.System.Snapshot = root
	for _, tc := range []struct {
		name string
		sys  bwrap.ViewAhead
		used bool
	}{
		{"a view ahead", &fakeAhead{v: ahead.System, done: make(chan struct{})}, true},
		{"no view ahead", (*planner.SystemHead)(nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := bwrap.EtcAhead(tc.sys)
			defer head.Close()
			headSnap := bwrap.HeadSnapshot(head)
			if (headSnap != nil) != tc.used {
				t.Fatalf("the head holds a snapshot: %v, want %v", headSnap != nil, tc.used)
			}
			p := snapshotPlan()
			p.System.Snapshot = root
			s, _, notes := bwrap.StartEtc(p, p, head)
			if s == nil {
				t.Fatalf("no snapshot for the Plan (%v)", notes)
			}
			defer s.Close()
			if used := s == headSnap; used != tc.used {
				t.Errorf("head start used: %v, want %v (%v)", used, tc.used, notes)
			}
		})
	}
}

// held reports whether a snapshot opened for want holds got: the same entries, but
// for trees that are bound (a mount point) rather than copied.
func held(got, want []etcsnap.Entry) bool {
	if len(got) != len(want) {
		return false
	}
	for i, g := range got {
		if g != want[i] && !(want[i].Tree && g == etcsnap.Entry{Name: want[i].Name, Dir: true}) {
			return false
		}
	}
	return true
}

// A tree the snapshot holds is not bound; one it could not copy is bound over its
// mount point, as without trees.
func TestRenderTrees(t *testing.T) {
	p := snapshotPlan()
	p.System.Paths = append(slices.Clone(minimalSystem), isolator.SystemPath{Path: "/etc/alternatives", Optional: true})
	entries, ok := bwrap.EtcEntries(p)
	if !ok {
		t.Fatal("no snapshot")
	}
	bound := slices.Clone(entries)
	for i, e := range bound {
		if e.Name == "alternatives" {
			bound[i] = etcsnap.Entry{Name: e.Name, Dir: true}
		}
	}
	for _, tc := range []struct {
		name    string
		entries []etcsnap.Entry
		binds   []string
	}{
		{"both copied", entries, nil},
		{"alternatives bound", bound, []string{"/etc/alternatives"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, _, err := bwrap.RenderSnapshot(p, tc.entries)
			if err != nil {
				t.Fatal(err)
			}
			var binds []string
			for i, a := range spec.Argv {
				if a == "--ro-bind-try" && strings.HasPrefix(spec.Argv[i+1], "/etc/") {
					binds = append(binds, spec.Argv[i+1])
				}
			}
			if !slices.Equal(binds, tc.binds) {
				t.Errorf("/etc binds %q, want %q\n%q", binds, tc.binds, spec.Argv)
			}
		})
	}
}
