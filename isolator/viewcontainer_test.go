package isolator_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// containerView is the View a harness makes for a Plan a container isolator runs,
// whose home is at home, an engine volume when volume is set.
func containerView(p *isolator.Plan, home string, volume bool) *isolator.View {
	return isolator.NewContainerView(p, isolator.ContainerHome{Path: home, Volume: volume})
}

// containerLab is a Plan as planner.Build makes it for any isolator, with host files
// a container does not see at the same paths: a system path of the default view (a
// container sees its image there), a file elsewhere on the host (the view with
// system_binds = ["host"]), and in the sandbox home's host directory a file a home
// volume does not hold.
type containerLab struct {
	root, home, sandboxHome, proj, sys, tool string
	plan                                     *isolator.Plan
}

func newContainerLab(t *testing.T, hostRoot bool) *containerLab {
	t.Helper()
	// Not below /tmp, which the view's own /tmp covers.
	dir, err := os.MkdirTemp("/var/tmp", "containerview-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	l := &containerLab{root: root, home: filepath.Join(root, "home", "u"), sandboxHome: filepath.Join(root, "data", "home"),
		sys: filepath.Join(root, "host", "etc"), tool: filepath.Join(root, "home", "u", ".tool.json")}
	l.proj = filepath.Join(l.home, "proj")
	for name, content := range map[string]string{
		filepath.Join(l.sys, "hostname"):       "HOST SYSTEM FILE\n",
		filepath.Join(root, "srv", "app.conf"): "HOST FILE\n",
		filepath.Join(l.sandboxHome, "notes"):  "HOST COPY OF THE HOME\n",
		filepath.Join(l.proj, "a.txt"):         "project\n",
		l.tool:                                 "tool config\n",
	} {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l.plan = &isolator.Plan{
		User:        isolator.User{Name: "u", HostHome: l.home},
		SandboxHome: l.sandboxHome,
		System:      isolator.SystemView{Host: hostRoot, Paths: []isolator.SystemPath{{Path: l.sys}}},
		Mounts: []isolator.Mount{
			{Kind: isolator.Bind, Source: l.sandboxHome, Dest: l.home, Why: "sandbox home"},
			{Kind: isolator.Bind, Source: l.tool, HomeRel: ".tool.json", ReadOnly: true, Why: "tool binding"},
			{Kind: isolator.MaskDir, HomeRel: ".ssh", Why: "sandbox.hide_paths"},
			{Kind: isolator.Bind, Source: l.proj, Dest: l.proj, Why: "project"},
		},
		Tmp: isolator.Tmp{Kind: "tmpfs"},
	}
	return l
}

func readAll(v *isolator.View, name string) (string, error) {
	f, err := v.Open(name, os.O_RDONLY, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

// TestContainerViewHostFiles is the attack of an agent in a docker or krun container
// on its harness's file tools: a path the container shows from its image, or from a
// home volume, names a host file of the same name that the harness must not read or
// write for it (DESIGN guarantee 11: the container sees nothing of the host's file
// system but the project, the sandbox home and declared mounts).
func TestContainerViewHostFiles(t *testing.T) {
	for _, hostRoot := range []bool{false, true} {
		l := newContainerLab(t, hostRoot)
		// The container's home at the host home's path (a Linux user's /home/u),
		// an engine volume (a remote engine, Docker Desktop).
		v := containerView(l.plan, l.home, true)
		if got, err := readAll(v, filepath.Join(l.sys, "hostname")); err == nil {
			t.Errorf("host root %v: Open(%s) read the host's %q; the container sees its image's file there", hostRoot, filepath.Join(l.sys, "hostname"), got)
		}
		if hostRoot {
			if got, err := readAll(v, filepath.Join(l.root, "srv", "app.conf")); err == nil {
				t.Errorf("Open(%s) read the host's %q with system_binds = [\"host\"]; a container binds nothing of the host's root", filepath.Join(l.root, "srv", "app.conf"), got)
			}
		}
		if got, err := readAll(v, filepath.Join(l.home, "notes")); !errors.Is(err, isolator.ErrNoHostPath) {
			t.Errorf("host root %v: Open($HOME/notes) of a home volume = %q, %v; want ErrNoHostPath: the host's %s is not in the volume", hostRoot, got, err, filepath.Join(l.sandboxHome, "notes"))
		}
		if f, err := v.Open(filepath.Join(l.home, "new"), os.O_WRONLY|os.O_CREATE, 0o644); !errors.Is(err, isolator.ErrNoHostPath) {
			if f != nil {
				f.Close()
			}
			t.Errorf("host root %v: Open($HOME/new, O_CREATE) of a home volume = %v; want ErrNoHostPath", hostRoot, err)
		}
		if _, err := os.Lstat(filepath.Join(l.sandboxHome, "new")); err == nil {
			t.Errorf("host root %v: the harness created %s for a container whose home is a volume", hostRoot, filepath.Join(l.sandboxHome, "new"))
		}
		// What the container does see from the host stays readable.
		if got, err := readAll(v, filepath.Join(l.home, ".tool.json")); err != nil || got != "tool config\n" {
			t.Errorf("host root %v: Open($HOME/.tool.json), a tool binding in a home volume = %q, %v", hostRoot, got, err)
		}
		if got, err := readAll(v, filepath.Join(l.proj, "a.txt")); err != nil || got != "project\n" {
			t.Errorf("host root %v: Open(project/a.txt) = %q, %v", hostRoot, got, err)
		}
	}
}

// TestContainerViewHome: a container's home (docker.home) lies elsewhere than the
// host home: the agent names its files there, and the host home's path is no home
// in the container.
func TestContainerViewHome(t *testing.T) {
	l := newContainerLab(t, false)
	const home = "/home/sandbox-user"
	v := containerView(l.plan, home, false)
	if got, err := readAll(v, home+"/notes"); err != nil || got != "HOST COPY OF THE HOME\n" {
		t.Errorf("Open(%s/notes) in the bound sandbox home = %q, %v", home, got, err)
	}
	if got, err := readAll(v, home+"/.tool.json"); err != nil || got != "tool config\n" {
		t.Errorf("Open(%s/.tool.json), a tool binding = %q, %v", home, got, err)
	}
	if got, err := readAll(v, filepath.Join(l.home, "notes")); err == nil {
		t.Errorf("Open(%s) = %q: the host home's path is no home in the container", filepath.Join(l.home, "notes"), got)
	}
	if err := v.CheckRead(home + "/.ssh/id_ed25519"); !errors.Is(err, isolator.ErrMasked) {
		t.Errorf("CheckRead(%s/.ssh/id_ed25519) = %v, want ErrMasked", home, err)
	}
	if err := v.CheckWrite(home + "/.tool.json"); !errors.Is(err, isolator.ErrReadOnly) {
		t.Errorf("CheckWrite(%s/.tool.json) = %v, want ErrReadOnly", home, err)
	}
	if got, err := readAll(v, filepath.Join(l.proj, "a.txt")); err != nil || got != "project\n" {
		t.Errorf("Open(project/a.txt) = %q, %v", got, err)
	}
}
