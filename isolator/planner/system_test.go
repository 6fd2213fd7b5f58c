package planner

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// chrootProbe reads root as if it were `/`. Symlinks in the tree must be relative.
func chrootProbe(root string) Probe {
	pr := probe("/")
	pr.Lstat = func(p string) (fs.FileInfo, error) { return os.Lstat(root + p) }
	pr.Stat = func(p string) (fs.FileInfo, error) { return os.Stat(root + p) }
	pr.ReadDir = func(p string) ([]fs.DirEntry, error) { return os.ReadDir(root + p) }
	pr.ReadDirN = nil  // falls back to the chrooted ReadDir
	pr.ReadNames = nil // so does names
	pr.Readlink = func(p string) (string, error) { return os.Readlink(root + p) }
	pr.EvalSymlinks = func(p string) (string, error) {
		r, err := filepath.EvalSymlinks(root + p)
		if err != nil {
			return "", err
		}
		if r = strings.TrimPrefix(r, root); r == "" {
			r = "/"
		}
		return r, nil
	}
	return pr
}

func TestSystemView(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mkdirs(t, root+"/usr/bin", root+"/usr/lib64", root+"/usr/lib", root+"/opt", root+"/srv/tools")
	symlink(t, "usr/bin", root+"/bin")
	symlink(t, "/usr/lib", root+"/lib")    // an absolute link is kept as it is
	symlink(t, "usr/lib64", root+"/lib64") // dangling links are recreated too
	symlink(t, "usr/lib32", root+"/lib32")
	writeFile(t, root+"/run/systemd/resolve/stub-resolv.conf", "nameserver 127.0.0.53\n")
	symlink(t, "../run/systemd/resolve/stub-resolv.conf", root+"/etc/resolv.conf")
	writeFile(t, root+"/etc/passwd", "u:x:1000:1000::/home/u:/bin/bash\n")
	symlink(t, "../usr/share/zoneinfo/UTC", root+"/etc/localtime") // dangling: skipped
	writeFile(t, root+"/etc/ssl/openssl.cnf", "")
	mkdirs(t, root+"/etc/ssl/certs") // not only files: bound
	writeFile(t, root+"/etc/profile.d/a.sh", "")
	writeFile(t, root+"/etc/profile.d/b.sh", "") // only files: copied one by one
	writeFile(t, root+"/usr/bin/x", "")
	symlink(t, "/usr/bin/x", root+"/etc/alternatives/x") // symlink farm: bound
	mkdirs(t, root+"/etc/ssh/ssh_config.d")              // empty: nothing to show
	writeFile(t, root+"/etc/ssh/ssh_config", "")
	pr := chrootProbe(root)

	for _, tc := range []struct {
		name  string
		binds []string
		want  isolator.SystemView
	}{
		{"minimal default", nil, isolator.SystemView{Paths: []isolator.SystemPath{
			{Path: "/usr", Optional: true},
			{Path: "/bin", Link: "usr/bin", Optional: true},
			{Path: "/lib", Link: "/usr/lib", Optional: true},
			{Path: "/lib32", Link: "usr/lib32", Optional: true},
			{Path: "/lib64", Link: "usr/lib64", Optional: true},
			// /opt is empty: no mount
			{Path: "/etc/resolv.conf", Optional: true, Copy: true}, // the file it resolves to
			{Path: "/etc/ssl", Optional: true},
			{Path: "/etc/passwd", Optional: true, Copy: true},
			{Path: "/etc/alternatives", Optional: true},
			{Path: "/etc/profile.d/a.sh", Optional: true, Copy: true},
			{Path: "/etc/profile.d/b.sh", Optional: true, Copy: true},
			{Path: "/etc/ssh/ssh_config", Optional: true, Copy: true},
		}, Snapshot: "/state/devsandbox/etc"}}, // copies: snapshotted there
		{"host", []string{"host"}, isolator.SystemView{Host: true}},
		{"configured list: bound as given", []string{"/usr", "/bin", "/etc/passwd", "/srv/tools"},
			isolator.SystemView{Paths: []isolator.SystemPath{
				{Path: "/usr"},
				{Path: "/bin", Link: "usr/bin"},
				{Path: "/etc/passwd"}, // only the default view copies /etc files
				{Path: "/srv/tools"},
			}}}, // nothing copied: no snapshot
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := systemView(pr, tc.binds, "/state/devsandbox/etc", nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("systemView:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestBuildDockerSockets: sockets visible in the view are masked unless
// sandbox.docker_socket; sockets outside the view need no mask.
func TestBuildDockerSockets(t *testing.T) {
	f := newFixture(t)
	run := f.root + "/run/user/1000"
	writeFile(t, run+"/docker.sock", "")
	writeFile(t, run+"/podman/podman.sock", "")
	// The sockets are shown one by one: a view of the runtime directory itself masks it
	// whole (TestBuildXDGOutsideHomes).
	shown := []string{run + "/docker.sock", run + "/podman"}
	for _, tc := range []struct {
		name   string
		system []string
		docker bool
		want   []string
	}{
		{"not visible", nil, false, nil},
		{"visible", shown, false, []string{
			"maskfile " + run + "/docker.sock (docker socket)",
			"maskfile " + run + "/podman/podman.sock (docker socket)",
		}},
		{"docker_socket = true", shown, true, nil},
		// A socket behind a hide_paths mask is hidden already: a mask file there would
		// show its name in a directory that appears empty.
		{"hidden", shown, false, []string{
			"maskdir " + run + "/podman (sandbox.hide_paths)",
			"maskfile " + run + "/docker.sock (docker socket)",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := f.load(t, "XDG_RUNTIME_DIR="+run)
			cfg.Sandbox.SystemBinds = tc.system
			cfg.Sandbox.DockerSocket = tc.docker
			cfg.Sandbox.HidePaths = nil
			if tc.name == "hidden" {
				cfg.Sandbox.HidePaths = []string{run + "/podman"}
			}
			p, _ := f.build(t, cfg)
			want := append(append(f.expand(p, baseMounts...), f.expand(p, "bind rw $PROJ -> $PROJ (project)")...), tc.want...)
			equalLines(t, "mounts", mountLines(p.Mounts), want)
		})
	}
}

// The engines devsandbox is configured with are masked where a view shows them,
// wherever they lie: docker.host, krun.podman_socket, the current docker CLI context
// (read only when a view shows more than the minimal one). A read-only bind does not
// stop connect(2) on a socket.
func TestBuildConfiguredEngineSockets(t *testing.T) {
	f := newFixture(t)
	srv := f.root + "/srv/engines"
	for _, n := range []string{"docker.sock", "podman.sock", "context.sock"} {
		writeFile(t, srv+"/"+n, "")
	}
	dcfg := f.root + "/dockercfg"
	sum := sha256.Sum256([]byte("stand"))
	writeFile(t, dcfg+"/contexts/meta/"+hex.EncodeToString(sum[:])+"/meta.json",
		`{"Name":"stand","Endpoints":{"docker":{"Host":"unix://`+srv+`/context.sock"}}}`)
	writeFile(t, dcfg+"/config.json", `{"currentContext":"stand"}`)
	for _, tc := range []struct {
		name   string
		system []string
		docker bool
		want   []string
	}{
		{"not visible", nil, false, nil},
		{"visible", []string{srv}, false, []string{
			"maskfile " + srv + "/docker.sock (docker socket)",
			"maskfile " + srv + "/podman.sock (docker socket)",
			"maskfile " + srv + "/context.sock (docker socket)",
		}},
		{"docker_socket = true", []string{srv}, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := f.load(t, "DOCKER_CONFIG="+dcfg)
			cfg.Sandbox.SystemBinds = tc.system
			cfg.Sandbox.DockerSocket = tc.docker
			cfg.Sandbox.HidePaths = nil
			cfg.Docker.Host = "unix://" + srv + "/docker.sock"
			cfg.Krun.PodmanSocket = srv + "/podman.sock"
			p, _ := f.build(t, cfg)
			want := append(append(f.expand(p, baseMounts...), f.expand(p, "bind rw $PROJ -> $PROJ (project)")...), tc.want...)
			equalLines(t, "mounts", mountLines(p.Mounts), want)
		})
	}
}

// A configured system path that does not exist is a config error at Build, not a
// generic bwrap failure at launch.
func TestSystemViewMissingPath(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root+"/usr")
	pr := chrootProbe(root)
	if _, err := systemView(pr, []string{"/usr", "/missing"}, "", nil); !errors.Is(err, ErrConfig) {
		t.Fatalf("systemView with a missing path: %v; want ErrConfig", err)
	}
}

// TestBuildOwnStateMasked: devsandbox's own configuration and state are masked where
// the host's system view shows them (outside the home, with system_binds = ["host"]
// or a bound parent), and need no mask where nothing shows them.
func TestBuildOwnStateMasked(t *testing.T) {
	f := newFixture(t)
	xdg := f.root + "/xdg"
	for _, d := range []string{"config", "share", "state"} {
		mkdirs(t, xdg+"/"+d+"/devsandbox")
	}
	env := []string{"XDG_CONFIG_HOME=" + xdg + "/config", "XDG_DATA_HOME=" + xdg + "/share", "XDG_STATE_HOME=" + xdg + "/state"}
	// Outside the home, each XDG directory is masked whole (maskXDGDirs), devsandbox's
	// own directories in it with it.
	masks := []string{
		"maskdir " + xdg + "/config (your XDG_CONFIG_HOME outside your home (sandbox.system_binds))",
		"maskdir " + xdg + "/share (your XDG_DATA_HOME outside your home (sandbox.system_binds))",
		"maskdir " + xdg + "/state (your XDG_STATE_HOME outside your home (sandbox.system_binds))",
	}
	for _, tc := range []struct {
		name   string
		system []string
		want   []string
	}{
		{"host view", []string{"host"}, masks},
		{"a bound parent", []string{xdg}, masks},
		{"minimal view", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := f.load(t, env...)
			cfg.Sandbox.SystemBinds = tc.system
			cfg.Sandbox.HidePaths = nil
			p, _ := f.build(t, cfg)
			var got []string
			for _, l := range mountLines(p.Mounts) {
				if strings.Contains(l, "own configuration") || strings.Contains(l, "outside your home") {
					got = append(got, l)
				}
			}
			equalLines(t, "masks of devsandbox's own state", got, tc.want)
		})
	}
}
