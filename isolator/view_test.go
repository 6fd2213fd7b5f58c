package isolator_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

const (
	vHome    = "/home/u"
	vProject = "/home/u/src/app"
	vSbHome  = "/home/u/.local/share/devsandbox/app-0123abcd/home"
	vState   = "/home/u/.local/state/devsandbox/app-0123abcd"
)

// viewPlan is a Plan as Build makes it for a project below the home, with one mount of
// every kind, in Build's order.
func viewPlan() *isolator.Plan {
	return &isolator.Plan{
		Project:     isolator.Project{Dir: vProject, ID: "0123abcd", Name: "app-0123abcd"},
		Workdir:     vProject,
		User:        isolator.User{Name: "u", UID: 1000, GID: 1000, HostHome: vHome},
		SandboxHome: vSbHome,
		StateDir:    vState,
		EmptyFile:   vState + "/empty",
		System: isolator.SystemView{Paths: []isolator.SystemPath{
			{Path: "/usr", Optional: true},
			{Path: "/bin", Link: "usr/bin", Optional: true},
			{Path: "/etc/passwd", Optional: true, Copy: true},
			{Path: "/etc/ssl", Optional: true},
		}},
		Mounts: []isolator.Mount{
			{Kind: isolator.Bind, Source: vSbHome, Dest: vHome, Why: "sandbox home"},
			{Kind: isolator.Bind, Source: vProject, Dest: vProject, Why: "project"},
			{Kind: isolator.Bind, Source: "/data/shared", Dest: "/data/shared", ReadOnly: true, Why: "sandbox.ro_binds"},
			{Kind: isolator.Bind, Source: "/data/out", Dest: "/data/out", Why: "sandbox.rw_binds"},
			{Kind: isolator.Bind, Source: "/srv/sets", Dest: "/mnt/sets", ReadOnly: true, Why: "sandbox.host_mounts"},
			{Kind: isolator.MaskDir, HomeRel: ".ssh", Why: "sandbox.hide_paths"},
			{Kind: isolator.MaskFile, HomeRel: ".netrc", Why: "sandbox.hide_paths"},
			{Kind: isolator.Bind, Source: vHome + "/.ssh/known_hosts", HomeRel: ".ssh/known_hosts", ReadOnly: true, Optional: true, Why: "tool ssh"},
			{Kind: isolator.Bind, Source: vHome + "/.gitconfig", HomeRel: ".gitconfig", ReadOnly: true, Why: "tool git"},
			{Kind: isolator.Bind, Source: vHome + "/.config/gh", HomeRel: ".config/gh", Why: "tool gh"},
			{Kind: isolator.Data, HomeRel: ".config/tool/config.json", Content: []byte("{}"), Why: "tool tool"},
			{Kind: isolator.TmpDir, HomeRel: ".cache/scratch", Why: "tool scratch"},
			{Kind: isolator.TmpDir, HomeRel: "linked/tmp", Why: "tool linked"},
			{Kind: isolator.Bind, Source: vProject + "/.git/hooks", Dest: vProject + "/.git/hooks", ReadOnly: true, Why: "git hooks"},
			{Kind: isolator.Bind, Source: vProject + "/.git/config", Dest: vProject + "/.git/config", ReadOnly: true, Why: "git config"},
			{Kind: isolator.Bind, Source: vProject + "/.devsandbox.toml", Dest: vProject + "/.devsandbox.toml", ReadOnly: true, Why: "project config"},
			{Kind: isolator.MaskFile, Dest: vProject + "/.env", Why: "sandbox.mask_files"},
			{Kind: isolator.MaskFile, Dest: vProject + "/sub/deep/.env.local", Why: "sandbox.mask_files"},
		},
		Tmp: isolator.Tmp{Kind: "session", Dir: vState + "/tmp", Session: "s1"},
		Secrets: []isolator.Secret{
			{Name: "API_TOKEN", EnvSource: "API_TOKEN"},
			{Name: "db_password", FileSource: "/home/u/secrets/db", AsFile: true},
		},
	}
}

// fakeLinks is the host's symlinks, by host path. Its Readlink fails the test when asked
// about the host home other than through a bind: the view must never look there.
type fakeLinks struct {
	t     *testing.T
	links map[string]string
}

func (f fakeLinks) readlink(name string) (string, error) {
	if isolator.Within(name, vHome) {
		ok := false
		for _, src := range []string{vSbHome, vProject, vState + "/tmp/s1", vHome + "/.ssh/known_hosts", vHome + "/.gitconfig", vHome + "/.config/gh"} {
			ok = ok || isolator.Within(name, src)
		}
		if !ok {
			f.t.Errorf("Readlink(%s): the host home is not in the view", name)
		}
	}
	if t, ok := f.links[name]; ok {
		return t, nil
	}
	return "", &os.PathError{Op: "readlink", Path: name, Err: errors.New("not a symlink")}
}

var hostLinks = map[string]string{
	vProject + "/out":         "/etc/shadow",
	vProject + "/up":          "../../../../etc/shadow",
	vProject + "/in":          "sub/main.go",
	vProject + "/in-abs":      vProject + "/sub",
	vProject + "/env":         ".env",
	vProject + "/sub/env":     "../.env",
	vProject + "/rc":          "/home/u/.bashrc", // in the sandbox: the sandbox home's
	vProject + "/key":         "/home/u/.ssh/id_ed25519",
	vProject + "/secret":      "/run/secrets/db_password",
	vProject + "/shared":      "/data/shared",
	vProject + "/outdir":      "/data/out",
	vProject + "/hooks":       ".git/hooks",
	vProject + "/loop":        "loop",
	vProject + "/dangling":    "/etc/cron.d/evil",
	vProject + "/proc":        "/proc/self/environ",
	vProject + "/sets":        "/mnt/sets/a",
	vSbHome + "/proj":         vProject + "/main.go",
	vSbHome + "/linked":       "/data/out/linked", // a mount (linked/tmp) lies below it
	vSbHome + "/hostrc":       "/home/u/.bashrc",
	vState + "/tmp/s1/lnk":    "/home/u/notes",
	"/data/shared/back":       "/home/u/src/app/.env",
	"/usr/bin/python3":        "python3.12",
	"/usr/lib/os-release-lnk": "../../etc/passwd",
}

// viewCase is one path: the error classes for reading and writing (nil: allowed), and
// the host path to open (empty: HostPath fails, with the read error or ErrNoHostPath).
type viewCase struct {
	path        string
	read, write error
	host        string
}

func runViewCases(t *testing.T, v *isolator.View, cases []viewCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			if err := v.CheckRead(c.path); !sameClass(err, c.read) {
				t.Errorf("CheckRead(%q) = %v, want %v", c.path, err, c.read)
			}
			if err := v.CheckWrite(c.path); !sameClass(err, c.write) {
				t.Errorf("CheckWrite(%q) = %v, want %v", c.path, err, c.write)
			}
			got, err := v.HostPath(c.path)
			wantErr := c.read
			if wantErr == nil && c.host == "" {
				wantErr = isolator.ErrNoHostPath
			}
			if got != c.host || !sameClass(err, wantErr) {
				t.Errorf("HostPath(%q) = %q, %v; want %q, %v", c.path, got, err, c.host, wantErr)
			}
		})
	}
}

func sameClass(err, want error) bool {
	if want == nil {
		return err == nil
	}
	return errors.Is(err, want)
}

var (
	outside  = isolator.ErrOutsideView
	masked   = isolator.ErrMasked
	readOnly = isolator.ErrReadOnly
	invalid  = isolator.ErrInvalidPath
)

func TestView(t *testing.T) {
	v := isolator.NewView(viewPlan())
	v.Readlink = fakeLinks{t, hostLinks}.readlink
	p, sb := vProject, vSbHome
	runViewCases(t, v, []viewCase{
		// The project, read-write, at its host path.
		{path: p + "/main.go", host: p + "/main.go"},
		{path: p + "/sub/new.go", host: p + "/sub/new.go"},
		// Lexical cleaning comes first.
		{path: p + "/./sub//x.go/", host: p + "/sub/x.go"},
		{path: p + "/sub/../.env", read: masked, write: masked},
		{path: p + "/../../../../etc/shadow", read: outside, write: outside},
		{path: p + "/out/../main.go", host: p + "/main.go"}, // out is a symlink; .. is lexical
		// Relative and malformed paths.
		{path: "src/app/main.go", read: invalid, write: invalid},
		{path: "./main.go", read: invalid, write: invalid},
		{path: "", read: invalid, write: invalid},
		{path: p + "/a\x00b", read: invalid, write: invalid},
		// Prefix tricks: a sibling is not inside.
		{path: "/data/shared-other/x", read: outside, write: outside},
		{path: "/home/user2/.bashrc", read: outside, write: outside},
		{path: "/tmpx", read: outside, write: outside},
		{path: p + "-other/x", host: sb + "/src/app-other/x"}, // in the sandbox home, not the host's
		{path: p + "/.envrc", host: p + "/.envrc"},
		{path: p + "/.git/hooksx", host: p + "/.git/hooksx"},
		// Masks, nested masks, and what a mask covers.
		{path: p + "/.env", read: masked, write: masked},
		{path: p + "/.env/", read: masked, write: masked},
		{path: p + "/sub/deep/.env.local", read: masked, write: masked},
		{path: p + "/sub/deep/.env.local/x", read: masked, write: masked},
		// Git and project config: readable, not writable; nor is a directory holding them.
		{path: p + "/.git/hooks", host: p + "/.git/hooks", write: readOnly},
		{path: p + "/.git/hooks/pre-commit", host: p + "/.git/hooks/pre-commit", write: readOnly},
		{path: p + "/.git/config", host: p + "/.git/config", write: readOnly},
		{path: p + "/.git/HEAD", host: p + "/.git/HEAD"},
		{path: p + "/.git", host: p + "/.git", write: readOnly}, // renaming it would carry the hooks away
		{path: p + "/sub", host: p + "/sub", write: readOnly},   // holds a mask
		{path: p, host: p, write: readOnly},
		{path: p + "/.devsandbox.toml", host: p + "/.devsandbox.toml", write: readOnly},
		// The sandbox home and home-relative mounts.
		{path: vHome + "/notes", host: sb + "/notes"},
		{path: vHome + "/.bashrc", host: sb + "/.bashrc"},
		{path: vHome, host: sb, write: readOnly},
		{path: vHome + "/.ssh", read: masked, write: masked},
		{path: vHome + "/.ssh/id_ed25519", read: masked, write: masked},
		{path: vHome + "/.ssh/known_hosts", host: vHome + "/.ssh/known_hosts", write: readOnly}, // a later mount covers the mask
		{path: vHome + "/.sshx", host: sb + "/.sshx"},
		{path: vHome + "/.netrc", read: masked, write: masked},
		{path: vHome + "/.gitconfig", host: vHome + "/.gitconfig", write: readOnly},
		{path: vHome + "/.config/gh/hosts.yml", host: vHome + "/.config/gh/hosts.yml"},
		{path: vHome + "/.config/tool/config.json", write: readOnly},
		{path: vHome + "/.cache/scratch/x"},
		// Explicit binds.
		{path: "/data/shared/x", host: "/data/shared/x", write: readOnly},
		{path: "/data/out/x", host: "/data/out/x"},
		{path: "/mnt/sets/a", host: "/srv/sets/a", write: readOnly},
		{path: "/srv/sets/a", read: outside, write: outside}, // the source is not in view
		// The system view: readable, never writable; the rest of the root is not there.
		{path: "/usr/include/stdio.h", host: "/usr/include/stdio.h", write: readOnly},
		{path: "/bin/sh", host: "/usr/bin/sh", write: readOnly},
		{path: "/usr/bin/python3", host: "/usr/bin/python3.12", write: readOnly},
		{path: "/etc/passwd", host: "/etc/passwd", write: readOnly},
		{path: "/usr/lib/os-release-lnk", host: "/etc/passwd", write: readOnly},
		{path: "/etc/shadow", read: outside, write: outside},
		{path: "/", read: outside, write: outside},
		{path: "/home", read: outside, write: outside},
		{path: "/proc/self/environ", read: outside, write: outside},
		{path: "/dev/null", read: outside, write: outside},
		{path: "/run/user/1000/bus", read: outside, write: outside},
		// Secrets: never through the library.
		{path: "/run/secrets/db_password", read: masked, write: masked},
		{path: "/run/secrets/API_TOKEN", read: outside, write: outside}, // an env secret: no file
		{path: "/run/secrets", read: outside, write: outside},
		// /tmp: the session dir.
		{path: "/tmp/x", host: vState + "/tmp/s1/x"},
		{path: "/tmp", host: vState + "/tmp/s1"},
		// Symlinks, followed as the sandbox follows them.
		{path: p + "/out", read: outside, write: outside},
		{path: p + "/up", read: outside, write: outside},
		{path: p + "/in", host: p + "/sub/main.go"},
		{path: p + "/in-abs/x.go", host: p + "/sub/x.go"},
		{path: p + "/env", read: masked, write: masked},
		{path: p + "/sub/env", read: masked, write: masked},
		{path: p + "/rc", host: sb + "/.bashrc"},
		{path: p + "/key", read: masked, write: masked},
		{path: p + "/secret", read: masked, write: masked},
		{path: p + "/shared/x", host: "/data/shared/x", write: readOnly},
		{path: p + "/shared/new.txt", host: "/data/shared/new.txt", write: readOnly},
		{path: p + "/outdir/new.txt", host: "/data/out/new.txt"},
		{path: p + "/hooks/pre-push", host: p + "/.git/hooks/pre-push", write: readOnly},
		{path: p + "/loop", read: outside, write: outside},
		{path: p + "/dangling", read: outside, write: outside},
		{path: p + "/proc", read: outside, write: outside},
		{path: p + "/sets", host: "/srv/sets/a", write: readOnly},
		{path: p + "/missing/deeper/file", host: p + "/missing/deeper/file"},
		{path: vHome + "/proj", host: p + "/main.go"},
		{path: vHome + "/hostrc", host: sb + "/.bashrc"},
		{path: vHome + "/linked/other", read: outside, write: outside}, // a symlink over a mount point
		{path: vHome + "/linked/tmp/x", read: outside, write: outside},
		{path: "/tmp/lnk", host: sb + "/notes"},
		{path: "/data/shared/back", read: masked, write: readOnly}, // the first denial: the lexical path's
	})
}

func TestViewReadOnlyProject(t *testing.T) {
	p := viewPlan()
	p.ReadOnly = true
	p.Mounts = []isolator.Mount{
		{Kind: isolator.Bind, Source: vSbHome, Dest: vHome, Why: "sandbox home"},
		{Kind: isolator.Bind, Source: vProject, Dest: vProject, ReadOnly: true, Why: "project (read-only)"},
		{Kind: isolator.Bind, Source: vProject + "/build", Dest: vProject + "/build", Why: "sandbox.writable_dirs"},
		{Kind: isolator.Bind, Source: vProject + "/.git", Dest: vProject + "/.git", Why: "git dir"},
		{Kind: isolator.Bind, Source: vProject + "/.git/hooks", Dest: vProject + "/.git/hooks", ReadOnly: true, Why: "git hooks"},
		{Kind: isolator.MaskFile, Dest: vProject + "/.git/config", Why: "git config"},
	}
	v := isolator.NewView(p)
	v.Readlink = fakeLinks{t, map[string]string{vProject + "/build/ro": "../main.go"}}.readlink
	runViewCases(t, v, []viewCase{
		{path: vProject + "/main.go", host: vProject + "/main.go", write: readOnly},
		{path: vProject + "/new.go", host: vProject + "/new.go", write: readOnly},
		{path: vProject + "/build/out.o", host: vProject + "/build/out.o"},
		{path: vProject + "/build", host: vProject + "/build"},
		{path: vProject + "/build-old/x", host: vProject + "/build-old/x", write: readOnly},
		{path: vProject + "/build/ro", host: vProject + "/main.go", write: readOnly},
		{path: vProject + "/.git/HEAD", host: vProject + "/.git/HEAD"},
		{path: vProject + "/.git/hooks/pre-commit", host: vProject + "/.git/hooks/pre-commit", write: readOnly},
		{path: vProject + "/.git/config", read: masked, write: masked},
	})
}

func TestViewHostSystem(t *testing.T) {
	p := viewPlan()
	p.System = isolator.SystemView{Host: true}
	p.Tmp = isolator.Tmp{Kind: "tmpfs"}
	v := isolator.NewView(p)
	v.Readlink = fakeLinks{t, map[string]string{"/var/run": "../run", "/etc/alt": "/usr/bin"}}.readlink
	runViewCases(t, v, []viewCase{
		{path: "/etc/shadow", host: "/etc/shadow", write: readOnly},
		{path: "/home/user2/x", host: "/home/user2/x", write: readOnly},
		{path: "/etc/alt/sh", host: "/usr/bin/sh", write: readOnly},
		{path: vHome + "/notes", host: vSbHome + "/notes"},
		{path: vHome + "/.ssh/id_rsa", read: masked, write: masked},
		{path: "/proc/1/environ", read: outside, write: outside},
		{path: "/var/run/docker.sock", read: outside, write: readOnly},
		{path: "/run/secrets/db_password", read: masked, write: masked},
		{path: "/tmp/x"}, // tmpfs: writable in the sandbox, no host file
		{path: "/", host: "/", write: readOnly},
	})
}

func TestViewTmp(t *testing.T) {
	for _, tc := range []struct {
		tmp  isolator.Tmp
		host string
	}{
		{isolator.Tmp{Kind: "session", Dir: "/state/tmp", Session: "s1"}, "/state/tmp/s1/a"},
		{isolator.Tmp{Kind: "shm", Dir: "/dev/shm/devsandbox-1000", Session: "s2"}, "/dev/shm/devsandbox-1000/s2/a"},
		{isolator.Tmp{Kind: "session", Dir: "/state/tmp"}, ""}, // before Run chose the session
		{isolator.Tmp{Kind: "tmpfs"}, ""},
	} {
		t.Run(tc.tmp.Kind, func(t *testing.T) {
			p := viewPlan()
			p.Tmp = tc.tmp
			v := isolator.NewView(p)
			v.Readlink = fakeLinks{t, nil}.readlink
			runViewCases(t, v, []viewCase{{path: "/tmp/a", host: tc.host}})
		})
	}
}

// TestViewLaterMountWins checks the mount-table rule: the last mount at or above a path
// decides it, whatever came before.
func TestViewLaterMountWins(t *testing.T) {
	ro := isolator.Mount{Kind: isolator.Bind, Source: "/d", Dest: "/d", ReadOnly: true}
	rw := isolator.Mount{Kind: isolator.Bind, Source: "/d", Dest: "/d"}
	mask := isolator.Mount{Kind: isolator.MaskDir, Dest: "/d/sub"}
	for _, tc := range []struct {
		name   string
		mounts []isolator.Mount
		cases  []viewCase
	}{
		{"ro then rw", []isolator.Mount{ro, rw}, []viewCase{{path: "/d/x", host: "/d/x"}}},
		{"rw then ro", []isolator.Mount{rw, ro}, []viewCase{{path: "/d/x", host: "/d/x", write: readOnly}}},
		{"mask then bind above", []isolator.Mount{mask, rw}, []viewCase{
			{path: "/d/sub/x", host: "/d/sub/x"},
			{path: "/d/sub", host: "/d/sub"}, // the covered mask no longer protects anything
		}},
		{"bind then mask below", []isolator.Mount{rw, mask}, []viewCase{
			{path: "/d/sub/x", read: masked, write: masked},
			{path: "/d/x", host: "/d/x"},
			{path: "/d", host: "/d", write: readOnly},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := viewPlan()
			p.Mounts = tc.mounts
			v := isolator.NewView(p)
			v.Readlink = fakeLinks{t, nil}.readlink
			runViewCases(t, v, tc.cases)
		})
	}
}

// TestViewBrokenPlan checks that a Plan bwrap would not render denies every path.
func TestViewBrokenPlan(t *testing.T) {
	for name, edit := range map[string]func(*isolator.Plan){
		"unknown mount kind": func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.MountKind(99), Dest: vProject + "/x"})
		},
		"unknown tmp": func(p *isolator.Plan) { p.Tmp.Kind = "disk" },
		"no home":     func(p *isolator.Plan) { p.User.HostHome = "" },
	} {
		t.Run(name, func(t *testing.T) {
			p := viewPlan()
			edit(p)
			v := isolator.NewView(p)
			v.Readlink = fakeLinks{t, nil}.readlink
			runViewCases(t, v, []viewCase{{path: vProject + "/main.go", read: outside, write: outside}})
		})
	}
}

// TestViewHostFS runs the default Readlink against real symlinks, below a bind whose
// source differs from its destination.
func TestViewHostFS(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "proj")
	if err := os.MkdirAll(src+"/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"escape":     "../other/secret.txt",
		"abs-escape": "/etc/shadow",
		"host-abs":   src + "/sub", // a host path: not one in the sandbox
		"inside":     "sub",
		"parent":     "..",
	} {
		if err := os.Symlink(target, filepath.Join(src, link)); err != nil {
			t.Fatal(err)
		}
	}
	p := &isolator.Plan{
		User:   isolator.User{HostHome: "/home/u"},
		Mounts: []isolator.Mount{{Kind: isolator.Bind, Source: src, Dest: "/proj", Why: "project"}},
		Tmp:    isolator.Tmp{Kind: "tmpfs"},
	}
	runViewCases(t, isolator.NewView(p), []viewCase{
		{path: "/proj/escape", read: outside, write: outside},
		{path: "/proj/abs-escape", read: outside, write: outside},
		{path: "/proj/inside/new.txt", host: src + "/sub/new.txt"},
		{path: "/proj/parent/other/secret.txt", read: outside, write: outside},
		{path: "/proj/parent/proj/sub/a", host: src + "/sub/a"},
	})
	// In the sandbox, the link's host path names nothing of the project: under /tmp it
	// is the sandbox's own tmpfs, elsewhere not visible. Either way it has no host path.
	if got, err := isolator.NewView(p).HostPath("/proj/host-abs/a"); err == nil {
		t.Errorf("HostPath(/proj/host-abs/a) = %q, want an error", got)
	}
}

// TestViewErrorNamesPath checks that errors name the path and what decided it.
func TestViewErrorNamesPath(t *testing.T) {
	v := isolator.NewView(viewPlan())
	v.Readlink = fakeLinks{t, hostLinks}.readlink
	for path, want := range map[string]string{
		vProject + "/.git/hooks/pre-commit": vProject + "/.git/hooks/pre-commit: read-only in the sandbox view (git hooks)",
		vProject + "/env":                   vProject + "/env (resolves to " + vProject + "/.env): masked in the sandbox view (sandbox.mask_files)",
		"/etc/shadow":                       "/etc/shadow: not visible in the sandbox view",
		vProject:                            vProject + ": read-only in the sandbox view: holds " + vProject + "/.git/hooks (git hooks)",
	} {
		err := v.CheckWrite(path)
		if err == nil || err.Error() != want {
			t.Errorf("CheckWrite(%q) = %v, want %q", path, err, want)
		}
	}
}
