package planner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

func TestPasswdWithHome(t *testing.T) {
	u := isolator.User{Name: "u", UID: 1000, GID: 1000, HostHome: "/ci/home", Shell: "/bin/bash"}
	cases := []struct {
		name, host string
		want       string // "" for nil: the host's is right
	}{
		{"another home", "root:x:0:0:root:/root:/bin/sh\nu:x:1000:1000:U:/home/u:/bin/bash\nv:x:1001:1001::/home/v:/bin/sh\n",
			"root:x:0:0:root:/root:/bin/sh\nu:x:1000:1000:U:/ci/home:/bin/bash\nv:x:1001:1001::/home/v:/bin/sh\n"},
		{"the same home", "u:x:1000:1000::/ci/home:/bin/sh\n", ""},
		{"the first entry of the uid", "a:x:1000:1000::/home/a:/bin/sh\nu:x:1000:1000::/home/u:/bin/sh\n",
			"a:x:1000:1000::/ci/home:/bin/sh\nu:x:1000:1000::/home/u:/bin/sh\n"},
		{"no final newline", "u:x:1000:1000::/home/u:/bin/sh", "u:x:1000:1000::/ci/home:/bin/sh"},
		{"a NIS line and a short one are no entry", "+u:x:1000:1000::/home/u:/bin/sh\nu:x:1000\n",
			"+u:x:1000:1000::/home/u:/bin/sh\nu:x:1000\nu:x:1000:1000:u:/ci/home:/bin/bash\n"},
		{"no entry", "root:x:0:0:root:/root:/bin/sh", "root:x:0:0:root:/root:/bin/sh\nu:x:1000:1000:u:/ci/home:/bin/bash\n"},
		{"empty", "", "u:x:1000:1000:u:/ci/home:/bin/bash\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := passwdWithHome([]byte(tc.host), u, u.HostHome)
			if tc.want == "" && got != nil || tc.want != "" && string(got) != tc.want {
				t.Errorf("passwdWithHome:\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestSandboxPasswd(t *testing.T) {
	host := "u:x:1000:1000::/home/u:/bin/sh\n"
	read := 0
	pr := Probe{ReadRegular: func(p string, _ int64, follow bool) ([]byte, error) {
		read++
		if !follow {
			t.Errorf("/etc/passwd read without following a link")
		}
		if p != "/etc/passwd" {
			return nil, fs.ErrNotExist
		}
		return []byte(host), nil
	}}
	u := isolator.User{Name: "u", UID: 1000, GID: 1000, HostHome: "/ci/home"}
	copied := isolator.SystemView{Paths: []isolator.SystemPath{{Path: "/usr"}, {Path: "/etc/passwd", Copy: true}}}
	cases := []struct {
		name  string
		v     isolator.SystemView
		u     isolator.User
		want  string
		reads int
	}{
		{"copied", copied, u, "u:x:1000:1000::/ci/home:/bin/sh\n", 1},
		{"the host's root", isolator.SystemView{Host: true}, u, "u:x:1000:1000::/ci/home:/bin/sh\n", 1},
		{"/etc bound", isolator.SystemView{Paths: []isolator.SystemPath{{Path: "/etc"}}}, u, "u:x:1000:1000::/ci/home:/bin/sh\n", 1},
		{"not in the view", isolator.SystemView{Paths: []isolator.SystemPath{{Path: "/usr"}}}, u, "", 0},
		{"a link in its place", isolator.SystemView{Paths: []isolator.SystemPath{{Path: "/etc", Link: "private/etc"}}}, u, "", 0},
		{"the home it names", copied, isolator.User{Name: "u", UID: 1000, GID: 1000, HostHome: "/home/u"}, "", 1},
		{"a home no entry can name", copied, isolator.User{Name: "u", UID: 1000, GID: 1000, HostHome: "/ci:home"}, "", 0},
		{"a relative home", copied, isolator.User{Name: "u", UID: 1000, GID: 1000, HostHome: "ci/home"}, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			read = 0
			got := sandboxPasswd(pr, tc.v, tc.u, tc.u.HostHome)
			if tc.want == "" && got != nil || tc.want != "" && string(got) != tc.want || read != tc.reads {
				t.Errorf("sandboxPasswd: %q after %d reads, want %q after %d", got, read, tc.want, tc.reads)
			}
		})
	}
	pr.ReadRegular = func(string, int64, bool) ([]byte, error) { return nil, errors.New("unreadable") }
	if got := sandboxPasswd(pr, copied, u, u.HostHome); got != nil {
		t.Errorf("sandboxPasswd with the host's file unreadable: %q, want nil (the host's, as the view places it)", got)
	}
}

// BenchmarkSandboxPasswd is what every Build pays for SystemView.Passwd with the
// default view on this host: one read of /etc/passwd ("same home", for the file's
// last entry: every line is looked at), and the copy when HOME is not the home the
// user's entry names ("other home").
func BenchmarkSandboxPasswd(b *testing.B) {
	host, err := os.ReadFile("/etc/passwd")
	if err != nil {
		b.Skip(err)
	}
	var u isolator.User
	for _, l := range strings.Split(strings.TrimSpace(string(host)), "\n") {
		if f := strings.Split(l, ":"); len(f) == 7 {
			uid, err1 := strconv.Atoi(f[2])
			gid, err2 := strconv.Atoi(f[3])
			if err1 == nil && err2 == nil {
				u = isolator.User{Name: f[0], UID: uid, GID: gid, HostHome: f[5]}
			}
		}
	}
	pr := OS("/")
	v := isolator.SystemView{Paths: []isolator.SystemPath{{Path: "/etc/passwd", Copy: true}}}
	b.Run("same home", func(b *testing.B) {
		for b.Loop() {
			if sandboxPasswd(pr, v, u, u.HostHome) != nil {
				b.Fatalf("the entry of %s names another home than %s", u.Name, u.HostHome)
			}
		}
	})
	other := u
	other.HostHome = "/var/tmp/elsewhere"
	b.Run("other home", func(b *testing.B) {
		for b.Loop() {
			if sandboxPasswd(pr, v, other, other.HostHome) == nil {
				b.Fatal("no copy for another home")
			}
		}
	})
}

// TestBuildPasswdFollowsSetHome: env.set HOME moves the command's HOME, and with it
// the home of the user's passwd entry, where ssh and `~user` look; a HOME no entry
// can name, or a host directory the view shows, is a configuration error.
func TestBuildPasswdFollowsSetHome(t *testing.T) {
	f := newFixture(t)
	cfg := f.load(t)
	p, _ := f.build(t, cfg)
	if got := passwdHomeOf(p.System.Passwd, p.User.UID); got != f.home {
		t.Fatalf("with the host's HOME, the entry names %q, want %q", got, f.home)
	}
	for _, home := range []string{f.proj + "/.home", "/elsewhere", "/tmp/h", f.home + "/sub"} {
		cfg := f.load(t)
		cfg.Env.Set = map[string]string{"HOME": home}
		p, _ := f.build(t, cfg)
		if got := passwdHomeOf(p.System.Passwd, p.User.UID); got != home {
			t.Errorf("env.set HOME = %q: the entry names %q", home, got)
		}
	}
	// The last: a host directory the view shows, where ssh would read the host's .ssh.
	for _, home := range []string{"rel/home", "", "/a:b", "/a\nroot:x:0:0::/:/bin/sh", "/usr/lib"} {
		cfg := f.load(t)
		cfg.Env.Set = map[string]string{"HOME": home}
		if _, _, err := f.tryBuild(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("env.set HOME = %q: %v, want ErrConfig", home, err)
		}
	}
	// A bind of the user's outside the project shows the host's directory too.
	shared := f.root + "/shared"
	mkdirs(t, shared)
	cfg = f.load(t)
	cfg.Sandbox.RWBinds = []string{shared}
	cfg.Env.Set = map[string]string{"HOME": shared + "/h"}
	if _, _, err := f.tryBuild(cfg); !errors.Is(err, ErrConfig) {
		t.Errorf("env.set HOME in a bind: %v, want ErrConfig", err)
	}
}

// TestBuildSetHomeThroughLinks: an env.set HOME in the project or the sandbox home
// is followed through the links a sandbox may have planted there (<project>/home ->
// /usr/lib): one leading to a host directory the view shows is refused, naming the
// link; one leading back into the sandbox's own places is not.
func TestBuildSetHomeThroughLinks(t *testing.T) {
	f := newFixture(t)
	p0, _ := f.build(t, f.load(t))
	sandboxHome := p0.SandboxHome
	mkdirs(t, f.proj+"/dot", sandboxHome)
	symlink(t, "/usr/lib", f.proj+"/home")
	symlink(t, "../../../../../../../../../../usr", f.proj+"/rel")
	symlink(t, f.proj+"/home", f.proj+"/twice")
	symlink(t, "dot", f.proj+"/inside")
	symlink(t, "/nonexistent-dsb", f.proj+"/unseen")
	symlink(t, "/usr/share", sandboxHome+"/h")
	for home, link := range map[string]string{
		f.proj + "/home":           f.proj + "/home",
		f.proj + "/home/sub":       f.proj + "/home",
		f.proj + "/rel/lib":        f.proj + "/rel",
		f.proj + "/twice/x":        f.proj + "/home",
		f.home + "/h":              f.home + "/h",
		f.proj + "/inside/../home": f.proj + "/home",
	} {
		cfg := f.load(t)
		cfg.Env.Set = map[string]string{"HOME": home}
		_, _, err := f.tryBuild(cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(fmt.Sprint(err), "the link "+link+",") {
			t.Errorf("env.set HOME = %q: %v, want ErrConfig naming the link %s", home, err, link)
		}
	}
	for _, home := range []string{f.proj + "/inside", f.proj + "/inside/x", f.proj + "/unseen/h"} {
		cfg := f.load(t)
		cfg.Env.Set = map[string]string{"HOME": home}
		if _, _, err := f.tryBuild(cfg); err != nil {
			t.Errorf("env.set HOME = %q (a link to the sandbox's own places): %v", home, err)
		}
	}
}

func TestCommandHome(t *testing.T) {
	u := isolator.User{HostHome: "/host/home"}
	if got := commandHome([]isolator.EnvVar{{Name: "A", Value: "x"}, {Name: "HOME", Value: "/set"}}, u); got != "/set" {
		t.Errorf("commandHome with HOME set: %q", got)
	}
	if got := commandHome(nil, u); got != "/host/home" {
		t.Errorf("commandHome without HOME: %q", got)
	}
}
