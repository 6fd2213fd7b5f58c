package planner

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/tools"
	"golang.org/x/sys/unix"
)

func TestParseProcNetUnix(t *testing.T) {
	in := "Num       RefCount Protocol Flags    Type St Inode Path\n" +
		"000000004e66c968: 00000002 00000000 00010000 0001 01 38357306 /var/run/docker.sock\n" +
		"0000000011111111: 00000002 00000000 00010000 0001 01   123 /var/lib/small inode.sock\n" +
		"0000000022222222: 00000003 00000000 00000000 0001 03 40589903\n" +
		"0000000033333333: 00000002 00000000 00010000 0001 01 40589904 @/tmp/.X11-unix/X0\n" +
		"0000000044444444: 00000002 00000000 00010000 0001 01 40589905 relative.sock\n" +
		"0000000055555555: 00000002 00000000 00010000 0005 01 40589906 /srv/a//b.sock\n" +
		"0000000066666666: 00000003 00000000 00000000 0001 03 40589907 /var/run/docker.sock\n"
	equalLines(t, "paths", parseProcNetUnix([]byte(in)), []string{"/var/run/docker.sock", "/var/lib/small inode.sock", "/srv/a/b.sock"})
}

// TestBuildHostSockets: the host's bound sockets (as /proc/net/unix lists them) are
// masked wherever a view beyond the minimal one shows them, and the host's ssh agent
// wherever any view does; a bind naming a service's socket shares it, one naming the
// agent is refused. The minimal view does not list the sockets at all.
func TestBuildHostSockets(t *testing.T) {
	f := newFixture(t)
	srv := f.root + "/srv"
	mkdirs(t, srv+"/svc", srv+"/agent", f.root+"/mnt/moved")
	for _, s := range []string{srv + "/svc/a.sock", srv + "/svc/b.sock", srv + "/agent/agent.sock", f.proj + "/dev.sock"} {
		if err := unix.Mknod(s, unix.S_IFSOCK|0o666, 0); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, srv+"/svc/plain", "") // listed, but a file now: left alone
	listed := []string{srv + "/svc/a.sock", srv + "/svc/b.sock", srv + "/svc/plain", srv + "/gone.sock", f.proj + "/dev.sock"}
	agent := srv + "/agent/agent.sock"
	for _, tc := range []struct {
		name                 string
		system, ro           []string
		mounts               []config.Mount
		listErr              error
		wantBinds, wantMasks []string
		wantErr              error
		wantListed           bool
	}{
		{name: "minimal view"},
		{name: "system bind", system: []string{srv}, wantListed: true, wantMasks: []string{
			"maskfile " + agent + " (the host's ssh agent (SSH_AUTH_SOCK))",
			"maskfile " + srv + "/svc/a.sock (a host service's socket)",
			"maskfile " + srv + "/svc/b.sock (a host service's socket)",
		}},
		{name: "ro bind of the directory", ro: []string{srv + "/svc"}, wantListed: true,
			wantBinds: []string{"bind ro " + srv + "/svc -> " + srv + "/svc (sandbox.ro_binds)"},
			wantMasks: []string{
				"maskfile " + srv + "/svc/a.sock (a host service's socket in sandbox.ro_binds)",
				"maskfile " + srv + "/svc/b.sock (a host service's socket in sandbox.ro_binds)",
			}},
		{name: "directory moved", mounts: []config.Mount{{Source: srv + "/svc", Dest: f.root + "/mnt/moved", ReadOnly: true}}, wantListed: true,
			wantBinds: []string{"bind ro " + srv + "/svc -> " + f.root + "/mnt/moved (sandbox.host_mounts)"},
			wantMasks: []string{
				"maskfile " + f.root + "/mnt/moved/a.sock (a host service's socket in sandbox.host_mounts)",
				"maskfile " + f.root + "/mnt/moved/b.sock (a host service's socket in sandbox.host_mounts)",
			}},
		{name: "ro bind of a socket shares it", ro: []string{srv + "/svc/a.sock"}, wantListed: true,
			wantBinds: []string{"bind ro " + srv + "/svc/a.sock -> " + srv + "/svc/a.sock (sandbox.ro_binds)"}},
		{name: "the agent's directory bound", ro: []string{srv + "/agent"}, wantListed: true,
			wantBinds: []string{"bind ro " + srv + "/agent -> " + srv + "/agent (sandbox.ro_binds)"},
			wantMasks: []string{"maskfile " + agent + " (the host's ssh agent (SSH_AUTH_SOCK) in sandbox.ro_binds)"}},
		{name: "the agent bound", ro: []string{agent}, wantErr: ErrConfig},
		{name: "listing fails", system: []string{srv}, listErr: errors.New("no /proc"), wantListed: true, wantErr: isolator.ErrProtection},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := f.load(t, "SSH_AUTH_SOCK="+agent)
			cfg.Sandbox.SystemBinds, cfg.Sandbox.ROBinds, cfg.Sandbox.HostMounts = tc.system, tc.ro, tc.mounts
			cfg.Sandbox.HidePaths = nil
			pr := probe(f.proj)
			called := false
			pr.UnixSockets = func() ([]string, error) { called = true; return listed, tc.listErr }
			p, _, err := Build(cfg, tools.Default(), pr, Request{Command: []string{"true"}})
			if called != tc.wantListed {
				t.Errorf("the host's sockets listed: %v, want %v", called, tc.wantListed)
			}
			if tc.wantErr != nil || err != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Build: %v, want %v", err, tc.wantErr)
				}
				return
			}
			want := append(f.expand(p, baseMounts...), f.expand(p, "bind rw $PROJ -> $PROJ (project)")...)
			want = append(append(want, tc.wantBinds...), tc.wantMasks...)
			equalLines(t, "mounts", mountLines(p.Mounts), want)
		})
	}
}

// TestBuildHostSocketsSecondPaths: /proc/net/unix names the path a socket was bound
// at. A socket renamed since and a hard link beside one are masked (every socket in
// a listed socket's directory is); a hard link in another directory cannot be found
// without a walk: the run stops.
func TestBuildHostSocketsSecondPaths(t *testing.T) {
	f := newFixture(t)
	srv := f.root + "/srv"
	mkdirs(t, srv+"/svc", srv+"/other")
	for _, s := range []string{srv + "/svc/renamed.sock", srv + "/svc/a.sock"} {
		if err := unix.Mknod(s, unix.S_IFSOCK|0o666, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(srv+"/svc/a.sock", srv+"/svc/a-link.sock"); err != nil {
		t.Fatal(err)
	}
	listed := []string{srv + "/svc/renamed.sock.tmp", srv + "/svc/a.sock"}
	build := func() (*isolator.Plan, error) {
		cfg := f.load(t)
		cfg.Sandbox.SystemBinds, cfg.Sandbox.HidePaths = []string{srv}, nil
		pr := probe(f.proj)
		pr.UnixSockets = func() ([]string, error) { return listed, nil }
		p, _, err := Build(cfg, tools.Default(), pr, Request{Command: []string{"true"}})
		return p, err
	}
	p, err := build()
	if err != nil {
		t.Fatal(err)
	}
	var masks []string
	for _, m := range p.Mounts {
		if m.Kind == isolator.MaskFile && m.Optional {
			masks = append(masks, m.Source+" -> "+m.Dest)
		}
	}
	equalLines(t, "socket masks", masks, []string{
		srv + "/svc/a-link.sock -> " + srv + "/svc/a-link.sock",
		srv + "/svc/a.sock -> " + srv + "/svc/a.sock",
		srv + "/svc/renamed.sock -> " + srv + "/svc/renamed.sock",
	})
	if err := os.Link(srv+"/svc/a.sock", srv+"/other/elsewhere.sock"); err != nil {
		t.Fatal(err)
	}
	if _, err := build(); !errors.Is(err, isolator.ErrProtection) {
		t.Errorf("a hard link in another directory: Build: %v, want %v", err, isolator.ErrProtection)
	}
}

// BenchmarkHostSocketsList is the host view's added work on this host: reading
// /proc/net/unix, then resolving and statting each absolute path listed.
func BenchmarkHostSocketsList(b *testing.B) {
	for b.Loop() {
		socks, err := procNetUnix()
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range socks {
			if r, err := filepath.EvalSymlinks(s); err == nil {
				_, _ = os.Lstat(r)
			}
		}
	}
}

// BenchmarkHostSocketsSecondPaths is what the host view adds on this host to find
// the listed sockets' other paths: the mount table read and parsed, each listed
// socket's directory read, and its mount aliases worked out (a stat each).
func BenchmarkHostSocketsSecondPaths(b *testing.B) {
	socks, err := procNetUnix()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		mi, err := os.ReadFile(mountInfoPath)
		if err != nil {
			b.Fatal(err)
		}
		table := parseMountInfo(mi)
		dirs := map[string]bool{}
		for _, s := range socks {
			d := filepath.Dir(s)
			if !dirs[d] {
				dirs[d] = true
				_, _ = os.ReadDir(d)
			}
			for _, a := range table.aliases(s) {
				_, _ = os.Lstat(a.path)
			}
		}
	}
}
