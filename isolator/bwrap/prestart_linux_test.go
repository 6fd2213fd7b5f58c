package bwrap_test

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/bwrap"
	"github.com/devsandbox/devsandbox/isolator/bwrap/internal/prestart"
)

// everywhere is a host where every path a rendering names is present (a project
// launched before: its mount points made), none reached through a link.
type everywhere struct{}

func (everywhere) Present(prestart.Source, string) (bool, error) { return true, nil }

// nowhere is a host where nothing below a bind's source is present.
type nowhere struct{}

func (nowhere) Present(_ prestart.Source, rel string) (bool, error) { return rel == ".", nil }

// pinnedAsRun returns p as Run renders it: every bind's source pinned (a descriptor)
// and every file mask's too (pin.Set's Apply).
func pinnedAsRun(p *isolator.Plan) *isolator.Plan {
	cp := *p
	cp.Mounts = append([]isolator.Mount(nil), p.Mounts...)
	for i, m := range cp.Mounts {
		if m.Kind == isolator.Bind || m.Kind == isolator.MaskFile {
			cp.Mounts[i].ID = &isolator.FileID{Dev: 2049, Ino: uint64(100 + i)}
		}
	}
	return &cp
}

// Every launch devsandbox renders for the golden plans that an early start may stand
// for passes the record's vetting: devsandbox's own records are kept. The others are
// the launches with a prefix or a session cgroup, which recordOf refuses.
func TestGoldenRecordsPassVet(t *testing.T) {
	const key = "0123456789abcdef0123456789abcdef"
	passed, firstRefused := 0, 0
	for _, tc := range goldenCases {
		p := pinnedAsRun(tc.plan())
		spec, err := renderCase(p, tc.how)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		r, err := bwrap.RecordOf(spec, p, key, "/usr/bin/bwrap", etcSnapshots+"/0123abcd", []string{"DEVSANDBOX_INIT=manifest"})
		if len(spec.Prefix) > 0 || spec.Cgroup != nil || spec.Scope != "" {
			if err == nil {
				t.Errorf("%s: a launch with a prefix or a session cgroup is recorded", tc.name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: not recorded: %v", tc.name, err)
			continue
		}
		x := prestart.Expect{StateRoot: path.Dir(stateDir)}
		for _, f := range r.Files {
			if f.Kind == prestart.KindSource && f.Path == p.System.Snapshot {
				t.Errorf("%s: the record names the snapshots' base %s, not the snapshot mounted", tc.name, f.Path)
			}
		}
		if err := prestart.Vet(r, x, everywhere{}); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		passed++
		// At a project's first launch nothing is present under the binds yet: the
		// mount points bwrap would make there are refused (that launch writes the
		// first record, and is never started early).
		if err := prestart.Vet(r, x, nowhere{}); err != nil {
			firstRefused++
		}
	}
	t.Logf("%d golden launches vetted, %d of them refused where nothing is present", passed, firstRefused)
	if passed < 8 || firstRefused == 0 {
		t.Errorf("only %d golden launches vetted, %d refused where nothing is present", passed, firstRefused)
	}
}

// A record never holds a secret's value, nor a host variable's: the plan's values
// here are set on the EnvVars themselves, as a Plan carries them.
func TestRecordOfKeepsNames(t *testing.T) {
	p := pinnedAsRun(basePlan())
	p.Env = append(p.Env,
		isolator.EnvVar{Name: "PASSED", Value: "host-value-1", FromHost: true},
		isolator.EnvVar{Name: "TOKEN", Value: "ghp_0123", Credential: true})
	p.Secrets = append(p.Secrets, isolator.Secret{Name: "API_KEY", EnvSource: "HOST_API_KEY"})
	// Secrets delivered as files, from a host file and from a host variable: their
	// pipes never carry a recorded content, whatever their size.
	secretFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secretFile, []byte("file-secret-value-9"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Data, Dest: "/run/generated", Content: []byte("no secret\n")})
	p.Secrets = append(p.Secrets, isolator.Secret{Name: "FILE_TOKEN", FileSource: secretFile, AsFile: true},
		isolator.Secret{Name: "ENV_TOKEN", EnvSource: "HOST_API_KEY", AsFile: true})
	spec, err := bwrap.Render(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bwrap.RecordOf(spec, p, "0123456789abcdef0123456789abcdef", "/usr/bin/bwrap", "", nil); err == nil {
		t.Fatal("a credential set by value is recorded")
	}
	p.Env = p.Env[:len(p.Env)-1]
	spec, err = bwrap.Render(p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := bwrap.RecordOf(spec, p, "0123456789abcdef0123456789abcdef", "/usr/bin/bwrap", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := prestart.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"host-value-1", "ghp_0123", "file-secret-value-9"} {
		if strings.Contains(string(b), v) {
			t.Errorf("the record holds %q", v)
		}
	}
	secretFDs, contents := 0, 0
	for _, f := range spec.Files {
		if f.Kind != bwrap.SecretFile && f.Kind != bwrap.SecretEnv {
			continue
		}
		secretFDs++
		for _, rf := range r.Files {
			if rf.FD == f.FD && (rf.Kind != prestart.KindData || rf.Content != nil) {
				t.Errorf("the secret file %s is recorded as %s with %d bytes", f.Dest, rf.Kind, len(rf.Content))
			}
		}
	}
	for _, rf := range r.Files {
		if rf.Kind == prestart.KindContent {
			contents++
		}
	}
	if secretFDs != 2 || contents == 0 {
		t.Errorf("%d secret files rendered (want 2), %d contents recorded (want some)", secretFDs, contents)
	}
	var names []string
	for _, e := range r.Env {
		names = append(names, e.Name+":"+string(e.Kind))
	}
	want := map[string]bool{"PASSED:host": true, "API_KEY:secret": true}
	for _, n := range names {
		delete(want, n)
	}
	if len(want) > 0 {
		t.Errorf("record's variables %v lack %v", names, want)
	}
	if err := prestart.Vet(r, prestart.Expect{StateRoot: path.Dir(stateDir)}, everywhere{}); err != nil {
		t.Errorf("the record of a plain launch is refused: %v", err)
	}
}

// What an early start gives bwrap from the record of a launch equals what Run gives
// it for the same plan at the next launch (another session /tmp, the host's values
// read again): the record, its argv and its environment round-trip to an exact
// match, so devsandbox's own records are used; and a changed host value is a miss.
func TestRecordedLaunchComparesEqual(t *testing.T) {
	const key, bin = "0123456789abcdef0123456789abcdef", "/usr/bin/bwrap"
	etcDir := etcSnapshots + "/0123abcd"
	host := map[string]string{"TERM": "xterm-256color", "GITHUB_TOKEN": "ghp_host", "HOST_API_KEY": "s3cr3t"}
	lookup := func(n string) (string, bool) { v, ok := host[n]; return v, ok }
	ids := map[string]prestart.Identity{}
	id := func(path string) prestart.Identity {
		if _, ok := ids[path]; !ok {
			ids[path] = prestart.Identity{Dev: 2049, Ino: uint64(500 + len(ids)), MntID: 31}
		}
		return ids[path]
	}
	manifest := []string{"DEVSANDBOX_INIT=checks"}
	compared, withContent := 0, 0
	for _, tc := range goldenCases {
		plan := func(session string) *isolator.Plan {
			p := pinnedAsRun(tc.plan())
			p.Env = append(p.Env, isolator.EnvVar{Name: "TERM", Value: host["TERM"], FromHost: true})
			p.Secrets = append(p.Secrets, isolator.Secret{Name: "API_KEY", EnvSource: "HOST_API_KEY"})
			if p.Tmp.Kind == "session" {
				p.Tmp.Session = session
			}
			for _, e := range p.Env {
				if e.FromHost {
					host[e.Name] = e.Value // the host's value, which the Plan carries
				}
			}
			for _, sec := range p.Secrets {
				if _, ok := host[sec.EnvSource]; !ok && sec.EnvSource != "" {
					host[sec.EnvSource] = "secret-of-" + sec.Name
				}
			}
			return p
		}
		prev := plan("0000000000000001")
		spec, err := renderCase(prev, tc.how)
		if err != nil {
			t.Fatal(err)
		}
		r, err := bwrap.RecordOf(spec, prev, key, bin, etcDir, manifest)
		if err != nil {
			continue // a prefix or a session cgroup (TestGoldenRecordsPassVet)
		}
		next := plan("0000000000000002")
		session := ""
		if next.Tmp.Kind == "session" {
			session = next.Tmp.Dir + "/" + next.Tmp.Session
		}
		env, err := r.Environ(lookup)
		if err != nil {
			t.Fatal(err)
		}
		early := prestart.Launch{Path: r.Bwrap, Argv: bwrap.RecordArgv(r, session), Env: env, Session: session}
		for _, f := range r.Files {
			fd := prestart.FD{FD: f.FD, Kind: f.Kind, Content: f.Content}
			if f.Kind == prestart.KindSource {
				fd.ID = id(f.Path)
			}
			early.FDs = append(early.FDs, fd)
		}
		spec2, err := renderCase(next, tc.how)
		if err != nil {
			t.Fatal(err)
		}
		fenv, err := bwrap.ChildEnv(spec2, host)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := bwrap.LaunchOf(spec2, bin, append(fenv, manifest...), session, func(f bwrap.File) (prestart.Identity, error) {
			if f.Kind == bwrap.EtcSnapshot {
				return id(etcDir), nil
			}
			return id(f.Source), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := prestart.Compare(&early, &fresh); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		compared++
		host["TERM"] = "dumb"
		changed, _ := r.Environ(lookup)
		host["TERM"] = "xterm-256color"
		early.Env = changed
		if err := prestart.Compare(&early, &fresh); !errors.Is(err, prestart.ErrMismatch) {
			t.Errorf("%s: a changed host value compares %v", tc.name, err)
		}
		early.Env = env
		for i, fd := range early.FDs {
			if fd.Kind != prestart.KindContent {
				continue
			}
			withContent++
			early.FDs[i].Content = append(append([]byte{}, fd.Content...), '\n')
			if err := prestart.Compare(&early, &fresh); !errors.Is(err, prestart.ErrMismatch) {
				t.Errorf("%s: a recorded content a byte longer compares %v", tc.name, err)
			}
			early.FDs[i].Content = fd.Content
		}
	}
	if compared < 8 {
		t.Errorf("only %d golden launches compared", compared)
	}
	if withContent == 0 {
		t.Error("no golden launch has a recorded content")
	}
}
