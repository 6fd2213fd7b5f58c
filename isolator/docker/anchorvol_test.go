package docker

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types"
	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"

	"github.com/devsandbox/devsandbox/isolator"
)

// On an engine with API 1.45+ (Options.Subpath) an anchor is the sub-path of a named
// volume of the directory it lies in, never a bind of its path nor a descriptor,
// read-only when the anchor is; its spec hash is the same from run to run, and a kept
// container with it can be started again.
func TestAnchorMountsSubpath(t *testing.T) {
	p := anchoredPlan()
	// A second anchor below the first, in the same project: one volume for both; and
	// a read-only one (git metadata).
	i := slices.IndexFunc(p.Mounts, func(m isolator.Mount) bool { return m.Anchor })
	p.Mounts = slices.Insert(p.Mounts, i+1,
		isolator.Mount{Kind: isolator.Bind, Source: project + "/sub/deep", Dest: project + "/sub/deep", Why: "holds a masked or protected path", Anchor: true},
		isolator.Mount{Kind: isolator.Bind, Source: project + "/sub/ro", Dest: project + "/sub/ro", Why: "git metadata", Anchor: true, ReadOnly: true})
	opts := opts
	opts.Subpath = true
	s, err := containerConfig(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	root := anchorRoot{Dir: project, Volume: anchorVolumeName(p, project)}
	if !reflect.DeepEqual(s.AnchorRoots, []anchorRoot{root}) {
		t.Fatalf("anchor roots %+v, want %+v", s.AnchorRoots, root)
	}
	if !strings.HasPrefix(root.Volume, "devsandbox-app-0123abcd-root-") {
		t.Errorf("volume name %s", root.Volume)
	}
	want := map[string]string{project + "/sub": "sub", project + "/sub/deep": "sub/deep", project + "/sub/ro": "sub/ro"}
	for _, m := range s.Host.Mounts {
		sub, ok := want[m.Target]
		if !ok {
			continue
		}
		delete(want, m.Target)
		vo := anchorVolumeOptions(p, root)
		exp := mount.Mount{Type: mount.TypeVolume, Source: root.Volume, Target: m.Target, ReadOnly: sub == "sub/ro", VolumeOptions: &mount.VolumeOptions{NoCopy: true, Subpath: sub,
			Labels: vo.Labels, DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{"type": "none", "o": "bind", "device": project}}}}
		if !reflect.DeepEqual(m, exp) {
			t.Errorf("the anchor at %s:\n%+v\nwant\n%+v", m.Target, m, exp)
		}
	}
	if len(want) > 0 {
		t.Errorf("anchors not mounted: %v", want)
	}
	if s.Anchored {
		t.Error("Spec.Anchored set: nothing ties a sub-path mount to this process")
	}
	s2, err := containerConfig(p, opts)
	if err != nil || s2.Hash != s.Hash {
		t.Errorf("the spec hash changed between two renders: %s, %s (%v)", s.Hash, s2.Hash, err)
	}
	pinned := opts
	pinned.Subpath = false
	pinned.Anchors = map[string]string{project + "/sub": "/proc/1/fd/3", project + "/sub/deep": "/proc/1/fd/4", project + "/sub/ro": "/proc/1/fd/5"}
	if s3, err := containerConfig(p, pinned); err != nil || s3.Hash == s.Hash || len(s3.AnchorRoots) != 0 {
		t.Errorf("pinned anchors: hash %s (sub-path %s), roots %v, %v", s3.Hash, s.Hash, s3.AnchorRoots, err)
	}
}

// A launch sets Subpath or Anchors: with neither, an anchor is bound by its path and
// named (--dry-run's script, run by hand); with Anchors set but an anchor missing
// from it (an engine that pins nothing left one), the render is refused, never a
// bind by path.
func TestAnchorRenderModes(t *testing.T) {
	p := anchoredPlan()
	s, err := containerConfig(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.ByPath, []string{project + "/sub"}) || len(s.AnchorRoots) != 0 || s.Anchored {
		t.Errorf("--dry-run: by path %v, roots %v, anchored %v; want the anchor by path only", s.ByPath, s.AnchorRoots, s.Anchored)
	}
	if !strings.Contains(s.Script(), "#   "+project+"/sub\n") {
		t.Errorf("the script does not name the anchor it binds by path:\n%s", s.Script())
	}
	launch := opts
	launch.Anchors = map[string]string{}
	if _, err := containerConfig(p, launch); !errors.Is(err, isolator.ErrProtection) {
		t.Errorf("an anchor neither pinned nor a sub-path: %v, want ErrProtection", err)
	}
}

// The volume's directory is the outermost writable one the anchor lies in: a
// writable_dirs entry of a read-only project is a sub-path of the project.
func TestTopDir(t *testing.T) {
	p := anchoredPlan()
	p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: "/data/shared", Dest: "/data/shared"},
		isolator.Mount{Kind: isolator.Bind, Source: "/data/shared/a", Dest: "/data/shared/a", Anchor: true})
	for src, want := range map[string]string{project + "/sub": project, project + "/sub/x/y": project, "/data/shared/a": "/data/shared", "/elsewhere/a": ""} {
		if got := topDir(p, src); got != want {
			t.Errorf("topDir(%s) = %q, want %q", src, got, want)
		}
	}
}

// makeAnchorVolumes refuses a volume of the name that binds another directory (or is
// another driver's): it would show something else below the mask.
func TestAnchorVolumeMismatchRefused(t *testing.T) {
	f := newFake(t)
	p := anchoredPlan()
	r := anchorRoot{Dir: project, Volume: anchorVolumeName(p, project)}
	if err := makeAnchorVolumes(context.Background(), f, p, []anchorRoot{r}); err != nil {
		t.Fatal(err)
	}
	o := f.volumes[r.Volume]
	if o.Driver != "local" || !reflect.DeepEqual(o.DriverOpts, map[string]string{"type": "none", "o": "bind", "device": project}) ||
		o.Labels[LabelRole] != roleAnchor || o.Labels[LabelProject] != p.Project.ID || o.Labels[LabelName] != p.Project.Name {
		t.Errorf("the volume was created with %+v", o)
	}
	f.volumes[r.Volume] = volume.CreateOptions{Name: r.Volume, Driver: "local", DriverOpts: map[string]string{"type": "none", "o": "bind", "device": "/elsewhere"}}
	err := makeAnchorVolumes(context.Background(), f, p, []anchorRoot{r})
	if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "docker volume rm "+r.Volume) {
		t.Errorf("a volume binding another directory: %v", err)
	}
	f.volumes[r.Volume] = volume.CreateOptions{Name: r.Volume}
	if err := makeAnchorVolumes(context.Background(), f, p, []anchorRoot{r}); !errors.Is(err, isolator.ErrProtection) {
		t.Errorf("a plain volume of the name: %v", err)
	}
}

// Run picks the anchors' form by the engine: a sub-path on API 1.45+, the pinned
// directory on an older local engine, and an older remote engine is refused before
// anything is created. (A newer remote engine is not refused, TestUnpinnableRefused;
// the fake cannot run the home volume's preparation a remote run makes.)
func TestRunAnchorsByEngine(t *testing.T) {
	for _, tc := range []struct {
		name, host, api string
		ro              bool   // the anchor is read-only (git metadata)
		want            string // "subpath", "pinned", "refused", "content"
	}{
		{"local 1.41", "unix:///fake.sock", "1.41", false, "pinned"},
		{"local 1.41 read-only", "unix:///fake.sock", "1.41", true, "pinned"},
		{"local 1.45", "unix:///fake.sock", "1.45", false, "subpath"},
		{"local 1.45 read-only", "unix:///fake.sock", "1.45", true, "subpath"},
		{"remote 1.44", "tcp://10.0.0.2:2376", "1.44", false, "refused"},
		{"remote 1.44 read-only", "tcp://10.0.0.2:2376", "1.44", true, "content"},
		{"remote 1.45", "tcp://10.0.0.2:2376", "1.45", false, "subpath"},
		{"remote 1.45 read-only", "tcp://10.0.0.2:2376", "1.45", true, "subpath"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			f.api = tc.api
			b, p := testIsolator(t, f, false)
			b.dial = func() (Engine, Address, error) {
				return f, Address{Host: tc.host, Origin: "docker.host", TLS: "DOCKER_CERT_PATH /certs"}, nil
			}
			// A remote engine's home is a volume, made and given to the user once.
			f.listed = []*volume.Volume{{Name: "devsandbox-" + p.Project.Name + "-home"}}
			sub := filepath.Join(p.Project.Dir, "sub")
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sub, ".env"), []byte("SECRET=1\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sub, "a.txt"), []byte("a\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			p.Mounts = append(p.Mounts,
				isolator.Mount{Kind: isolator.Bind, Source: sub, Dest: sub, Why: "holds a masked or protected path", Anchor: true, ReadOnly: tc.ro},
				isolator.Mount{Kind: isolator.MaskFile, Dest: sub + "/.env", Why: "sandbox.mask_files"})
			_, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard})
			if tc.want == "refused" {
				if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "speaks API 1.44, older than 1.45") {
					t.Fatalf("Run: %v, want the refusal naming the engine's API version", err)
				}
				if len(f.created) > 0 {
					t.Errorf("a container was created: %v", f.calls)
				}
				return
			}
			if err != nil && !strings.Contains(err.Error(), "init") {
				t.Logf("Run: %v", err)
			}
			if f.versions != 0 {
				// The ping's header says it; /version costs the engine ~10 ms.
				t.Errorf("the run asked the engine's version %d times", f.versions)
			}
			if len(f.created) == 0 {
				t.Fatalf("no container created: %v (%v)", f.calls, err)
			}
			var got, file *mount.Mount
			hc := f.created[len(f.created)-1].host
			for _, m := range hc.Mounts {
				switch m.Target {
				case sub:
					got = &m
				case sub + "/a.txt":
					file = &m
				}
			}
			if tc.want == "content" {
				// An empty read-only directory holding a copy of each file (the
				// masked one left out); nothing of the host's bound by path.
				if _, ok := hc.Tmpfs[sub]; !ok || got != nil || file == nil || file.Source == sub+"/a.txt" {
					t.Errorf("the read-only anchor is not its content: the directory %+v (tmpfs %v), its file %+v", got, hc.Tmpfs, file)
				}
				return
			}
			if got == nil || got.Type != mount.TypeVolume || got.VolumeOptions == nil {
				t.Fatalf("the anchor's mount: %+v", got)
			}
			switch tc.want {
			case "subpath":
				name := anchorVolumeName(p, p.Project.Dir)
				if got.Source != name || got.VolumeOptions.Subpath != "sub" || got.VolumeOptions.DriverConfig.Options["device"] != p.Project.Dir || got.ReadOnly != tc.ro {
					t.Errorf("the anchor is not the sub-path of %s: %+v %+v", name, got, got.VolumeOptions)
				}
				if _, ok := f.volumes[name]; !ok || !slices.Contains(f.calls, "VolumeCreate "+name) {
					t.Errorf("the volume %s was not made: %v", name, f.calls)
				}
			case "pinned":
				d := got.VolumeOptions.DriverConfig
				if d == nil || !strings.HasPrefix(d.Options["device"], "/proc/") || got.VolumeOptions.Subpath != "" || (d.Options["o"] == "bind,ro") != tc.ro {
					t.Errorf("the anchor is not the pinned directory: %+v", got.VolumeOptions)
				}
			}
		})
	}
}

// pingEngine answers a ping and the version request only.
type pingEngine struct {
	Engine   // nil: other calls panic
	ping     types.Ping
	versions int
}

func (e *pingEngine) Ping(context.Context) (types.Ping, error) { return e.ping, nil }

func (e *pingEngine) ServerVersion(context.Context) (types.Version, error) {
	e.versions++
	return types.Version{APIVersion: "1.45"}, nil
}

// engineAPI takes the engine's API version from its ping, and asks the version only
// of an engine whose ping does not say.
func TestEngineAPI(t *testing.T) {
	e := &pingEngine{ping: types.Ping{APIVersion: "1.41"}}
	if v, err := engineAPI(context.Background(), e); v != "1.41" || err != nil || e.versions != 0 {
		t.Errorf("engineAPI = %q, %v after %d version requests; want the ping's 1.41 and none", v, err, e.versions)
	}
	e = &pingEngine{}
	if v, err := engineAPI(context.Background(), e); v != "1.45" || err != nil || e.versions != 1 {
		t.Errorf("engineAPI without a header = %q, %v after %d version requests; want the version's 1.45", v, err, e.versions)
	}
}

// volumeFirstEngine holds a derived image's build (its commit) until
// the volume named volume has been asked to be made, and fails the test when that
// never comes.
type volumeFirstEngine struct {
	*fakeEngine
	volume string
	once   sync.Once
	made   chan struct{}
}

func (v *volumeFirstEngine) VolumeCreate(ctx context.Context, o volume.CreateOptions) (volume.Volume, error) {
	if o.Name == v.volume {
		v.once.Do(func() { close(v.made) })
	}
	return v.fakeEngine.VolumeCreate(ctx, o)
}

func (v *volumeFirstEngine) ContainerCommit(ctx context.Context, id string, o dockercontainer.CommitOptions) (dockercontainer.CommitResponse, error) {
	select {
	case <-v.made:
	case <-time.After(30 * time.Second):
		v.t.Errorf("the volume %s was made only after the image was prepared, not beside it", v.volume)
	}
	return v.fakeEngine.ContainerCommit(ctx, id, o)
}

// subpathAnchorRun is a run on an engine that mounts sub-paths, of a Plan whose
// project sub-directory "sub" is an anchor (it holds a masked file); name is the
// anchors' volume.
func subpathAnchorRun(t *testing.T) (f *fakeEngine, b *Isolator, p *isolator.Plan, sub, name string) {
	t.Helper()
	f = newFake(t)
	f.api = SubpathAPI
	b, p = testIsolator(t, f, false)
	sub = filepath.Join(p.Project.Dir, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	p.Mounts = append(p.Mounts,
		isolator.Mount{Kind: isolator.Bind, Source: sub, Dest: sub, Why: "holds a masked or protected path", Anchor: true},
		isolator.Mount{Kind: isolator.MaskFile, Dest: sub + "/.env", Why: "sandbox.mask_files"})
	return f, b, p, sub, anchorVolumeName(p, p.Project.Dir)
}

// On an engine that mounts sub-paths, the anchors' volume is made while the image is
// prepared, and the container mounts it once it was checked.
func TestRunAnchorVolumeBesideImage(t *testing.T) {
	f, b, p, sub, name := subpathAnchorRun(t)
	v := &volumeFirstEngine{fakeEngine: f, volume: name, made: make(chan struct{})}
	b.dial = func() (Engine, Address, error) { return v, Address{Host: "unix:///fake.sock", Origin: "test"}, nil }
	if _, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard}); err != nil && !strings.Contains(err.Error(), "init") {
		t.Logf("Run: %v", err)
	}
	if len(f.created) == 0 {
		t.Fatalf("no container created: %v", f.calls)
	}
	var got *mount.Mount
	for _, m := range f.created[len(f.created)-1].host.Mounts {
		if m.Target == sub {
			got = &m
		}
	}
	if got == nil || got.Source != name || got.VolumeOptions == nil || got.VolumeOptions.Subpath != "sub" {
		t.Errorf("the anchor is not the sub-path of %s: %+v", name, got)
	}
	if i, j := slices.Index(f.calls, "VolumeCreate "+name), slices.IndexFunc(f.calls, func(c string) bool { return strings.HasPrefix(c, "ContainerCreate devsandbox-") }); i < 0 || j < i {
		t.Errorf("the volume was not made before the run's container: %v", f.calls)
	}
}

// A volume of the anchors' name that binds another directory stops the run before its
// container is created, though it was asked for ahead.
func TestRunAnchorVolumeConflict(t *testing.T) {
	f, b, p, _, name := subpathAnchorRun(t)
	f.volumes[name] = volume.CreateOptions{Name: name, Driver: "local", DriverOpts: map[string]string{"type": "none", "o": "bind", "device": "/elsewhere"}}
	_, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard})
	if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "docker volume rm "+name) {
		t.Errorf("Run: %v, want the refusal of the volume %s", err, name)
	}
	for _, c := range f.calls {
		if strings.HasPrefix(c, "ContainerCreate devsandbox-") {
			t.Errorf("the run's container was created: %v", f.calls)
		}
	}
}
