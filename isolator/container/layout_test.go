package container

import (
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// plan is a plan under dir: the sandbox home and the project bound, an optional
// tool directory, a masked file.
func plan(dir string) *isolator.Plan {
	home, proj := filepath.Join(dir, "share/home"), filepath.Join(dir, "proj")
	return &isolator.Plan{
		Project:     isolator.Project{Dir: proj, ID: "0123abcd", Name: "proj-0123abcd"},
		Workdir:     proj,
		User:        isolator.User{Name: "u", UID: 1000, GID: 1000, HostHome: "/home/u", Shell: "/bin/sh"},
		SandboxHome: home,
		StateDir:    filepath.Join(dir, "state"),
		EmptyFile:   filepath.Join(dir, "empty"),
		Self:        "/usr/local/bin/devsandbox-init",
		PrivateDirs: []string{home},
		Mounts: []isolator.Mount{
			{Kind: isolator.Bind, Source: home, Dest: "/home/u", Why: "sandbox home"},
			{Kind: isolator.Bind, Source: proj, Dest: proj, Why: "project"},
			{Kind: isolator.Bind, Source: filepath.Join(dir, "gone"), HomeRel: ".cache/go", Optional: true, Why: "tool go"},
			{Kind: isolator.MaskFile, Dest: proj + "/.env", Why: "sandbox.mask_files"},
			{Kind: isolator.TmpDir, HomeRel: ".npm/_cacache", Why: "tool node"},
		},
		Egress:  egress.Rules{Mode: egress.Proxy, Proxy: egress.Endpoint{Unix: "/run/x/proxy-s.sock"}, SocketDir: "/run/x"},
		Command: []string{"true"},
	}
}

func checked(m *wire.Manifest) []string {
	var out []string
	for _, c := range m.Checks {
		out = append(out, string(c.Kind)+" "+c.Path)
	}
	return out
}

// Prepare makes the host side and drops an optional bind whose source is gone, with
// its check, from the container's manifest and a kept session's: what a backend
// renders afterwards is what is in force. WriteFiles writes every generated file, a
// backend's own too.
func TestPrepare(t *testing.T) {
	dir := t.TempDir()
	p := plan(dir)
	if err := os.MkdirAll(p.Project.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := Lay(p, Options{Home: "/home/dev", FilesDir: filepath.Join(dir, "state/files"), Keep: true}, "1.0")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(checked(l.Manifest), "rw /home/dev/.cache/go") || !slices.Contains(checked(l.Session), "rw /home/dev/.cache/go") {
		t.Fatalf("no check of the optional bind before Prepare: %q", checked(l.Manifest))
	}
	if err := l.Prepare(); err != nil {
		t.Fatal(err)
	}
	l.File([]byte("a backend's own file\n"))
	if err := l.WriteFiles(); err != nil {
		t.Fatal(err)
	}
	for _, m := range l.Mounts {
		if m.Target == "/home/dev/.cache/go" {
			t.Errorf("the optional bind of a missing source is still mounted: %+v", m)
		}
	}
	for _, man := range []*wire.Manifest{l.Manifest, l.Session} {
		if slices.Contains(checked(man), "rw /home/dev/.cache/go") {
			t.Errorf("the dropped bind is still checked: %q", checked(man))
		}
	}
	for _, f := range l.Files {
		if b, err := os.ReadFile(f.Path); err != nil || string(b) != string(f.Content) {
			t.Errorf("%s: %q, %v", f.Path, b, err)
		}
	}
	if fi, err := os.Stat(p.SandboxHome); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("sandbox home: %v, %v", fi, err)
	}
	if fi, err := os.Stat(p.EmptyFile); err != nil || fi.Size() != 0 {
		t.Errorf("mask source: %v, %v", fi, err)
	}
}

// MakeMountPoints creates, as the caller, the mount points inside a read-write bind
// (here the sandbox home) that the engine would create as root: a directory for a
// directory, a file for a file.
func TestMakeMountPoints(t *testing.T) {
	dir := t.TempDir()
	p := plan(dir)
	p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: p.EmptyFile, HomeRel: ".gitconfig", ReadOnly: true, Why: "tool git"})
	l, err := Lay(p, Options{Home: "/home/dev", FilesDir: filepath.Join(dir, "files")}, "1.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Prepare(); err != nil {
		t.Fatal(err)
	}
	l.MakeMountPoints()
	for path, dir := range map[string]bool{".npm/_cacache": true, ".gitconfig": false} {
		fi, err := os.Lstat(filepath.Join(p.SandboxHome, path))
		if err != nil || fi.IsDir() != dir {
			t.Errorf("%s: %v, %v (want a directory: %v)", path, fi, err, dir)
		}
	}
}

// The --dry-run script makes the mount points MakeMountPoints makes, and like it makes
// none below a parent that is a symbolic link (one the sandbox planted in its home).
func TestWriteMountPoints(t *testing.T) {
	made := func(script bool) []string {
		dir := t.TempDir()
		p := plan(dir)
		elsewhere := filepath.Join(dir, "elsewhere")
		p.Mounts = append(p.Mounts,
			isolator.Mount{Kind: isolator.Bind, Source: p.EmptyFile, HomeRel: ".gitconfig", ReadOnly: true, Why: "tool git"},
			isolator.Mount{Kind: isolator.Bind, Source: dir, HomeRel: "link/in", ReadOnly: true, Why: "a test"},
		)
		l, err := Lay(p, Options{Home: "/home/dev", FilesDir: filepath.Join(dir, "files")}, "1.0")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Prepare(); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(elsewhere, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(elsewhere, filepath.Join(p.SandboxHome, "link")); err != nil {
			t.Fatal(err)
		}
		if script {
			var b strings.Builder
			l.WriteMountPoints(&b, MadeByRoot)
			if out, err := exec.Command("/bin/sh", "-c", b.String()).CombinedOutput(); err != nil {
				t.Fatalf("the script: %v\n%s\n%s", err, out, b.String())
			}
		} else {
			l.MakeMountPoints()
		}
		var out []string
		for _, root := range []string{p.SandboxHome, elsewhere} {
			_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
				if err == nil {
					rel, _ := filepath.Rel(dir, path)
					out = append(out, rel+" "+d.Type().String())
				}
				return nil
			})
		}
		return out
	}
	want := made(false)
	if !slices.Contains(want, "share/home/.gitconfig ----------") || !slices.Contains(want, "share/home/.npm/_cacache d---------") || len(want) < 4 {
		t.Fatalf("MakeMountPoints made %q", want)
	}
	if got := made(true); !slices.Equal(got, want) {
		t.Errorf("the script made\n%q\nMakeMountPoints\n%q", got, want)
	}
}

// A symlink on the way to a mount point (one a concurrent session swapped in after
// the launch's check) is not followed: nothing is created where it points.
func TestMakeMountPointsFollowsNoLink(t *testing.T) {
	dir := t.TempDir()
	p := plan(dir)
	p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: p.EmptyFile, HomeRel: ".config/gh/hosts.yml", ReadOnly: true, Why: "tool gh"})
	l, err := Lay(p, Options{Home: "/home/dev", FilesDir: filepath.Join(dir, "files")}, "1.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Prepare(); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(p.SandboxHome, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(p.SandboxHome, ".config")); err != nil {
		t.Fatal(err)
	}
	l.MakeMountPoints()
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("created through the link: %v", ents)
	}
}

// A mask of a directory lists the mount points later mounts create in it.
func TestMaskDirAllows(t *testing.T) {
	p := plan(t.TempDir())
	p.Mounts = append(p.Mounts,
		isolator.Mount{Kind: isolator.MaskDir, HomeRel: ".config", Why: "sandbox.hide_paths"},
		isolator.Mount{Kind: isolator.Bind, Source: "/src/gh", HomeRel: ".config/gh/hosts.yml", ReadOnly: true, Why: "tool gh"},
	)
	l, err := Lay(p, Options{}, "1.0")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range l.Manifest.Checks {
		if c.Kind == wire.CheckMaskDir && (c.Path != "/home/u/.config" || !slices.Equal(c.Allow, []string{"gh"})) {
			t.Errorf("mask check %+v", c)
		}
	}
}

// A shipped layout binds nothing of the host's but the project, the home and the
// user's mounts: not the init (in the derived image, checked sealed), not passwd,
// group or a generated file on the root (in the image too), not the mask source (the
// engine's own file), not the proxy's socket, the socket directory or the publish
// directory (the endpoint volume is the companion's). One-shot containers forward to
// the session's socket there and serve its publish directory; kept ones leave that
// to sessions.
func TestLayShipped(t *testing.T) {
	dir := t.TempDir()
	p := plan(dir)
	p.Proxy.Session = "5e55"
	p.Egress.PublishDir = "/run/x/publish-5e55"
	p.Egress.Forwards = []egress.Forward{{HostPort: 8080, SandboxPort: 3000}}
	p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Data, Dest: "/run/devsandbox/ca-bundle.pem", Content: []byte("CA"), Why: "proxy.mitm"},
		isolator.Mount{Kind: isolator.Data, HomeRel: ".ssh/config", Content: []byte("Host *\n"), Why: "tool ssh"}) // under the home: still a bind
	files := filepath.Join(dir, "state/files")
	for _, keep := range []bool{false, true} {
		l, err := Lay(p, Options{Home: "/home/dev", FilesDir: files, Keep: keep, Shipped: true, EndpointVolume: "ep-vol", MaskSource: "/engine/mask/empty"}, "1.0")
		if err != nil {
			t.Fatal(err)
		}
		var endpoint, masks int
		for _, m := range l.Mounts {
			switch {
			case m.Target == "/run" || m.Target == ShipDir:
				t.Errorf("keep=%v: a mount at %s covers the image's files", keep, m.Target)
			case m.Type == Volume && m.Source == "ep-vol" && m.Target == EndpointDir:
				endpoint++
			case m.Type == Bind && m.Source == "/engine/mask/empty" && m.ReadOnly:
				masks++
			case m.Type == Bind && !slices.Contains([]string{p.SandboxHome, p.Project.Dir, filepath.Join(dir, "gone")}, m.Source) &&
				!(filepath.Dir(m.Source) == files && isolator.Within(m.Target, "/home/dev")):
				t.Errorf("keep=%v: a bind of the host's %s at %s", keep, m.Source, m.Target)
			}
		}
		if endpoint != 1 || masks == 0 {
			t.Errorf("keep=%v: %d endpoint mounts and %d engine-side masks in %+v", keep, endpoint, masks, l.Mounts)
		}
		var baked []string
		for _, f := range l.ImageFiles {
			baked = append(baked, f.Path)
		}
		if !slices.Equal(baked, []string{"/run/devsandbox/ca-bundle.pem", "/etc/passwd", "/etc/group"}) {
			t.Errorf("keep=%v: the image's files: %q", keep, baked)
		}
		for _, want := range []string{"sealed " + InitPath, "data /etc/passwd", "data /run/devsandbox/ca-bundle.pem"} {
			if !slices.Contains(checked(l.Manifest), want) {
				t.Errorf("keep=%v: no check %q: %q", keep, want, checked(l.Manifest))
			}
		}
		if slices.Contains(checked(l.Manifest), "ro "+InitPath) || !slices.Contains(checked(l.Manifest), "maskfile "+p.Project.Dir+"/.env") {
			t.Errorf("keep=%v: the init's or the mask's check: %q", keep, checked(l.Manifest))
		}
		for _, c := range l.Manifest.Checks {
			if c.Kind == wire.CheckMaskFile && c.Ino != 0 {
				t.Errorf("keep=%v: the engine's mask file checked against a host identity: %+v", keep, c)
			}
		}
		if l.EmptyFile != "" {
			t.Errorf("keep=%v: the host's mask source %s is still made", keep, l.EmptyFile)
		}
		publish := "3000=" + EndpointDir + "/publish-5e55/3000.sock"
		if keep {
			if l.Manifest.ForwardDir != "127.0.0.1:3128="+EndpointDir || l.Session.Forward != "" || !slices.Equal(l.Session.Publish, []string{publish}) {
				t.Errorf("kept: forward dir %q, session forward %q, publish %q", l.Manifest.ForwardDir, l.Session.Forward, l.Session.Publish)
			}
		} else if l.Manifest.Forward != "127.0.0.1:3128="+EndpointDir+"/proxy-5e55.sock" || !slices.Equal(l.Manifest.Publish, []string{publish}) {
			t.Errorf("one-shot: forward %q, publish %q", l.Manifest.Forward, l.Manifest.Publish)
		}
	}
	if _, err := Lay(p, Options{Shipped: true}, "1.0"); err == nil {
		t.Error("a shipped layout with a proxy and no endpoint volume")
	}
	p.Egress, p.Proxy.Session = egress.Rules{Mode: egress.None}, ""
	if l, err := Lay(p, Options{Shipped: true}, "1.0"); err != nil || slices.ContainsFunc(l.Mounts, func(m Mount) bool { return m.Target == EndpointDir }) {
		t.Errorf("egress none, shipped: %v, %+v", err, l)
	}
	// The ssh agent alone sets a socket directory: a kept shipped container binds
	// nothing of it.
	p.Egress.SocketDir = filepath.Join(files, "sock")
	if l, err := Lay(p, Options{Shipped: true, Keep: true, AgentSocket: AgentDir + "/s.sock"}, "1.0"); err != nil || slices.ContainsFunc(l.Mounts, func(m Mount) bool { return m.Type == Bind && strings.HasPrefix(m.Source, p.Egress.SocketDir) }) {
		t.Errorf("egress none, kept, shipped, with an agent: %v, %+v", err, l)
	}
}

// A shipped one-shot layout gives the names resolved at launch to the engine's own
// /etc/hosts, not a bound file (it changes from session to session); a kept one
// still binds the file it rewrites in place.
func TestLayShippedHosts(t *testing.T) {
	dir := t.TempDir()
	p := plan(dir)
	p.Egress = egress.Rules{Mode: egress.Allowlist, Allow: []egress.Entry{{Host: "example.org", Port: 443}},
		Resolved: []egress.Resolved{{Host: "example.org", Port: 443, Addrs: []netip.Addr{netip.MustParseAddr("192.0.2.9"), netip.MustParseAddr("2001:db8::9")}}}}
	p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Data, Dest: "/etc/hosts", Content: []byte("127.0.0.1 localhost\n" + p.Egress.HostsFile()), Volatile: true})
	p.Proxy.Session = "5e55"
	o := Options{Home: "/home/dev", FilesDir: filepath.Join(dir, "files"), Shipped: true, MaskSource: "/engine/empty", EndpointVolume: "ep"}
	l, err := Lay(p, o, "1.0")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.Hosts, []string{"example.org:192.0.2.9", "example.org:2001:db8::9"}) || !slices.Contains(checked(l.Manifest), "ro /etc/hosts") {
		t.Errorf("hosts %q, checks %q", l.Hosts, checked(l.Manifest))
	}
	for _, m := range l.Mounts {
		if m.Target == "/etc/hosts" {
			t.Errorf("a one-shot container binds /etc/hosts from %s", m.Source)
		}
	}
	o.Keep = true
	if l, err = Lay(p, o, "1.0"); err != nil || l.Hosts != nil || !slices.ContainsFunc(l.Mounts, func(m Mount) bool { return m.Target == "/etc/hosts" }) {
		t.Errorf("kept: hosts %q, mounts %+v, %v", l.Hosts, l.Mounts, err)
	}
}

// A bind's source swapped for a link after the launch's check (a concurrent session
// renames a directory of the project and puts a link in its place): a mount point
// below that bind is not made where the link leads. CI found other/.env made beside
// the project this way (TestBindSourceSwap).
func TestMakeMountPointRootIsNoLink(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(dir, "other")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "sub")
	if err := os.Symlink(outside, root); err != nil {
		t.Fatal(err)
	}
	makeMountPoint(root, ".env", false)
	makeMountPoint(root, "d/e", true)
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("created through the bind source's link: %v", ents)
	}
}

// TestAgentSocket: without Options.AgentSocket (krun) the container binds the
// session's relay; with it (docker, whose Plan then holds no bind of the relay) the
// container has a tmpfs of root's at AgentDir, where it serves the agent itself,
// and SSH_AUTH_SOCK names the socket there, kept container or not.
func TestAgentSocket(t *testing.T) {
	for _, served := range []bool{false, true} {
		t.Run(strconv.FormatBool(served), func(t *testing.T) {
			dir := t.TempDir()
			p := plan(dir)
			p.SSHAgent = isolator.AgentRelay{Upstream: "/tmp/ssh-x/agent.1", Socket: "/run/x/agent/s1.sock"}
			p.Env = []isolator.EnvVar{{Name: "SSH_AUTH_SOCK", Value: "/run/devsandbox/ssh-agent.sock"}}
			o := Options{Home: "/home/dev", FilesDir: filepath.Join(dir, "state/files")}
			want := []Mount{{Type: Bind, Source: "/run/x/agent/s1.sock", Target: "/run/devsandbox/ssh-agent.sock"}}
			wantEnv := "/run/devsandbox/ssh-agent.sock"
			if served {
				o.Keep, o.AgentSocket = true, AgentDir+"/s1.sock"
				want = []Mount{{Type: Scratch, Target: AgentDir, Tmpfs: Tmpfs{Mode: "0755", NoExec: true}}}
				wantEnv = o.AgentSocket
			} else {
				p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: p.SSHAgent.Socket, Dest: "/run/devsandbox/ssh-agent.sock", Why: "tool ssh"})
			}
			l, err := Lay(p, o, "1.0")
			if err != nil {
				t.Fatal(err)
			}
			var agent []Mount
			for _, m := range l.Mounts {
				if strings.HasPrefix(m.Source, "/run/x/agent") || m.Target == AgentDir || m.Target == "/run/devsandbox/ssh-agent.sock" {
					agent = append(agent, m)
				}
			}
			if !reflect.DeepEqual(agent, want) {
				t.Errorf("the agent's mounts = %+v, want %+v", agent, want)
			}
			var env []isolator.EnvVar
			for _, e := range l.Env {
				if e.Name == "SSH_AUTH_SOCK" {
					env = append(env, e)
				}
			}
			if len(env) != 1 || env[0].Value != wantEnv {
				t.Errorf("SSH_AUTH_SOCK = %+v, want %s", env, wantEnv)
			}
		})
	}
}

// A tool's variable naming a location below the host home names it below the
// container's home, where the tool's bindings land, as a value of its own (not the
// host's, so a script does not take it from the environment); at the host home's path
// it keeps the host's value.
func TestEnvHomeRel(t *testing.T) {
	p := plan(t.TempDir())
	p.Env = []isolator.EnvVar{
		{Name: "CLAUDE_CONFIG_DIR", Value: "/home/u/claude-work", FromHost: true, HomeRel: "claude-work"},
		{Name: "HOME", Value: "/home/u", FromHost: true},
		{Name: "TERM", Value: "xterm", FromHost: true},
	}
	for home, want := range map[string][]isolator.EnvVar{
		"/Users/u": {{Name: "CLAUDE_CONFIG_DIR", Value: "/Users/u/claude-work"}, {Name: "HOME", Value: "/Users/u"}, {Name: "TERM", Value: "xterm", FromHost: true}},
		"/home/u":  {{Name: "CLAUDE_CONFIG_DIR", Value: "/home/u/claude-work", FromHost: true, HomeRel: "claude-work"}, {Name: "HOME", Value: "/home/u"}, {Name: "TERM", Value: "xterm", FromHost: true}},
	} {
		if got := Env(p, home); !reflect.DeepEqual(got, want) {
			t.Errorf("home %s:\n got %+v\nwant %+v", home, got, want)
		}
	}
}

// A kept container's session init starts its runtime with one P: its argv says so
// and the exec's environment carries GOMAXPROCS=1 for it alone, unless the command's
// environment sets GOMAXPROCS, which the init then passes on as it is.
func TestSessionGOMAXPROCS(t *testing.T) {
	dir := t.TempDir()
	p := plan(dir)
	l, err := Lay(p, Options{Home: "/home/dev", FilesDir: filepath.Join(dir, "files"), Keep: true}, "1.0")
	if err != nil {
		t.Fatal(err)
	}
	end := slices.Index(l.SessionCmd, "--")
	if end < 0 || !slices.Contains(l.SessionCmd[:end], wire.UnsetGOMAXPROCSArg) || !slices.Equal(l.SessionEnv, []string{wire.InitGOMAXPROCS}) {
		t.Errorf("session: %q with %q", l.SessionCmd, l.SessionEnv)
	}
	p.Env = append(p.Env, isolator.EnvVar{Name: "GOMAXPROCS", Value: "3"})
	if l, err = Lay(p, Options{Home: "/home/dev", FilesDir: filepath.Join(dir, "files"), Keep: true}, "1.0"); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(l.SessionCmd, wire.UnsetGOMAXPROCSArg) || l.SessionEnv != nil {
		t.Errorf("the command's GOMAXPROCS=3: session %q with %q", l.SessionCmd, l.SessionEnv)
	}
	if l, err = Lay(p, Options{Home: "/home/dev", FilesDir: filepath.Join(dir, "files")}, "1.0"); err != nil || l.SessionEnv != nil {
		t.Errorf("no kept container: %v, %q", err, l.SessionEnv)
	}
}
