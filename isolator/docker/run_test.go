package docker

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/docker/engineaddr"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/isolator/hostsvc"
	"github.com/devsandbox/devsandbox/isolator/imageuse"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
	"github.com/devsandbox/devsandbox/proxy/audit"
	"github.com/devsandbox/devsandbox/proxy/companion"
)

// fakeEngine is an Engine whose containers run a simulated init. It records every
// call; a call it does not implement fails the test (through the nil embedded
// interface, which panics).
type fakeEngine struct {
	Engine // nil: unexpected calls panic
	t      *testing.T

	mu         sync.Mutex
	calls      []string
	images     map[string]bool
	containers map[string]*fakeContainer // by name and by id
	execs      map[string]*fakeExec
	nextID     int

	// init simulates devsandbox-init: it reads the frames on in and writes stdout
	// and stderr; its result is the exit status.
	init func(hello *wire.Hello, in io.Reader, stdout, stderr io.Writer) int
	// hellos are the hello frames the inits received.
	hellos []*wire.Hello
	// events order what the inits and companions did (their hellos, ready lines).
	events []string
	// copied are the files copied into containers, by container id and path.
	copied map[string][]byte
	// derived are the images committed, by ID; derives the calls that made them and
	// looked them up (not in calls).
	derived map[string]image.InspectResponse
	derives []string
	aux     int // containers made, not run: d1, d2…
	commits int
	// loadable: base images have layers, and ImageLoad takes a derived image's
	// archive (else it refuses, as an engine that does not take one: the image is
	// committed); loads counts the images it loaded.
	loadable bool
	loads    int
	// baseVolumes are the VOLUMEs of every base image's config.
	baseVolumes []string
	// requests are the companions' requests; volumes the volumes that exist.
	requests []companion.Request
	volumes  map[string]volume.CreateOptions
	listed   []*volume.Volume // what VolumeList answers (a remote engine's home volume)
	created  []*fakeContainer // every container created, removed ones too
	sweeps   int              // sweeps of leftovers begun
	lists    int              // container listings (any)
	api      string           // the API version the engine speaks; 1.41 when ""
	versions int              // ServerVersion requests
	// noEnd: the simulated session inits do not report their session's end
	// (wire.EndMarker), as one its command killed or stopped; endCode is then the
	// status of the exec that asks the keeper to end it (--role=end).
	noEnd   bool
	endCode int
	// noHello: the run fails before its hello; the inits' streams end without one.
	noHello bool
	// endedExec, when set, is an exec's whole life, over before ContainerExecAttach
	// returns (the host's hello comes too late): it gets the exec's command and the
	// engine's end of the stream, and returns the exec's status. The stream is closed
	// after it, in both directions, as a relay between the host and the engine may.
	endedExec func(cmd []string, stdout, stderr io.Writer) int
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

type fakeContainer struct {
	id, name string
	cfg      *dockercontainer.Config
	host     *dockercontainer.HostConfig
	running  bool
	conn     net.Conn // the init's end of the attach stream
	waiters  []chan dockercontainer.WaitResponse
	execIDs  []string
}

type fakeExec struct {
	id      string
	c       *fakeContainer
	cmd     []string
	running bool
	code    int
}

func newFake(t *testing.T) *fakeEngine {
	return &fakeEngine{t: t, images: map[string]bool{"devsandbox/default:1.0": true}, containers: map[string]*fakeContainer{}, execs: map[string]*fakeExec{},
		copied: map[string][]byte{}, volumes: map[string]volume.CreateOptions{}, derived: map[string]image.InspectResponse{},
		init: func(h *wire.Hello, in io.Reader, stdout, stderr io.Writer) int {
			fmt.Fprint(stderr, wire.ReadyMarker)
			fmt.Fprint(stdout, "hello from the command\n")
			return 3
		}}
}

func (f *fakeEngine) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeEngine) Close() error { return nil }

func (f *fakeEngine) Ping(context.Context) (types.Ping, error) {
	return types.Ping{APIVersion: cmp.Or(f.api, "1.41")}, nil
}

func (f *fakeEngine) ServerVersion(context.Context) (types.Version, error) {
	f.mu.Lock()
	f.versions++
	f.mu.Unlock()
	return types.Version{APIVersion: cmp.Or(f.api, "1.41"), Arch: "amd64"}, nil
}

func (f *fakeEngine) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (image.InspectResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.derives = append(f.derives, "ImageInspect "+ref)
	if in, ok := f.derived[ref]; ok {
		return in, nil
	}
	if !f.images[ref] {
		return image.InspectResponse{}, cerrdefs.ErrNotFound
	}
	in := image.InspectResponse{ID: "sha256:base-" + ref}
	if f.loadable {
		in.Os, in.Architecture, in.Created = "linux", "amd64", "2026-01-02T03:04:05Z"
		in.Config = &dockerspec.DockerOCIImageConfig{ImageConfig: ocispec.ImageConfig{Env: []string{"PATH=/bin"}, Cmd: []string{"sh"}, Labels: map[string]string{"base": "1"}}}
		in.RootFS = image.RootFS{Type: "layers", Layers: []string{"sha256:" + strings.Repeat("b", 64)}}
	}
	if len(f.baseVolumes) > 0 {
		if in.Config == nil {
			in.Config = &dockerspec.DockerOCIImageConfig{}
		}
		in.Config.Volumes = map[string]struct{}{}
		for _, v := range f.baseVolumes {
			in.Config.Volumes[v] = struct{}{}
		}
	}
	return in, nil
}

// ImageLoad takes a derived image's archive when f is loadable: the image of the
// config's digest, its files in copied under "load:".
func (f *fakeEngine) ImageLoad(_ context.Context, input io.Reader, _ ...client.ImageLoadOption) (image.LoadResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.derives = append(f.derives, "ImageLoad")
	if !f.loadable {
		return image.LoadResponse{}, errors.New("the fake engine loads no image")
	}
	files := map[string][]byte{}
	tr := tar.NewReader(input)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return image.LoadResponse{}, err
		}
		files[h.Name], _ = io.ReadAll(tr)
	}
	var m []struct{ Config string }
	var img dockerspec.DockerOCIImage
	if err := json.Unmarshal(files["manifest.json"], &m); err != nil || len(m) != 1 {
		return image.LoadResponse{}, fmt.Errorf("manifest %q: %v", files["manifest.json"], err)
	}
	config := files[m[0].Config]
	if err := json.Unmarshal(config, &img); err != nil {
		return image.LoadResponse{}, err
	}
	id := digest.FromBytes(config).String()
	var layers []string
	for _, d := range img.RootFS.DiffIDs {
		layers = append(layers, d.String())
	}
	if d := digest.FromBytes(files["layer.tar"]).String(); d != layers[len(layers)-1] {
		return image.LoadResponse{}, fmt.Errorf("invalid diffID: %s, want %s", d, layers[len(layers)-1])
	}
	lr := tar.NewReader(bytes.NewReader(files["layer.tar"]))
	for {
		h, err := lr.Next()
		if err != nil {
			break
		}
		f.copied["load:/"+h.Name], _ = io.ReadAll(lr)
	}
	cfg := img.Config
	f.derived[id] = image.InspectResponse{ID: id, Config: &cfg, RootFS: image.RootFS{Type: "layers", Layers: layers}}
	f.images[id] = true
	f.loads++
	return image.LoadResponse{Body: io.NopCloser(strings.NewReader(`{"stream":"Loaded image ID: ` + id + `\n"}` + "\n"))}, nil
}

// ContainerCommit makes the derived image sha256:derived<N> of container id.
func (f *fakeEngine) ContainerCommit(_ context.Context, id string, _ dockercontainer.CommitOptions) (dockercontainer.CommitResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	f.commits++
	img := fmt.Sprintf("sha256:derived%d", f.commits)
	f.derived[img] = image.InspectResponse{ID: img, Config: &dockerspec.DockerOCIImageConfig{ImageConfig: ocispec.ImageConfig{Labels: c.cfg.Labels}}}
	f.images[img] = true
	f.derives = append(f.derives, "ContainerCommit")
	return dockercontainer.CommitResponse{ID: img}, nil
}

func (f *fakeEngine) ContainerCreate(_ context.Context, cfg *dockercontainer.Config, host *dockercontainer.HostConfig, _ *network.NetworkingConfig, _ *ocispec.Platform, name string) (dockercontainer.CreateResponse, error) {
	// Every container devsandbox creates turns the image's HEALTHCHECK off
	// (noHealthcheck): a create without it, from any path a test drives through this
	// engine (the run's, the kept ones, the companion, the helpers, a derivation), fails.
	if hc := cfg.Healthcheck; hc == nil || !slices.Equal(hc.Test, []string{"NONE"}) {
		return dockercontainer.CreateResponse{}, fmt.Errorf("fake engine: container %q (image %s) created with the image's HEALTHCHECK left on (%+v)", name, cfg.Image, hc)
	}
	label, shown := "kept", name
	switch {
	case name == "":
		// A derived image's or the mask volume's container: not the run's.
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.images[cfg.Image] && !strings.HasPrefix(cfg.Image, "sha256:base-") {
			return dockercontainer.CreateResponse{}, cerrdefs.ErrNotFound
		}
		f.derives = append(f.derives, "ContainerCreate "+cfg.Image)
		f.aux++
		c := &fakeContainer{id: fmt.Sprintf("d%d", f.aux), cfg: cfg, host: host}
		f.containers[c.id] = c
		return dockercontainer.CreateResponse{ID: c.id}, nil
	case cfg.Labels[LabelRole] != "":
		label, shown = cfg.Labels[LabelRole], name[:len(name)-9]
	case cfg.Labels[LabelKept] != "true":
		label, shown = "run", name[:len(name)-9] // without the random suffix
	}
	f.record("ContainerCreate %s (%s)", shown, label)
	if !f.images[cfg.Image] {
		return dockercontainer.CreateResponse{}, cerrdefs.ErrNotFound
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, taken := f.containers[name]; taken {
		return dockercontainer.CreateResponse{}, fmt.Errorf("the name %s is in use: %w", name, cerrdefs.ErrConflict)
	}
	f.nextID++
	c := &fakeContainer{id: fmt.Sprintf("c%d", f.nextID), name: name, cfg: cfg, host: host}
	f.containers[c.id], f.containers[name] = c, c
	f.created = append(f.created, c)
	return dockercontainer.CreateResponse{ID: c.id}, nil
}

// pipe returns a connected pair with kernel buffering, as a socket to the engine has.
func pipe(t *testing.T) (client, server net.Conn) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "pipe")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return conn(fds[0]), conn(fds[1])
}

func (f *fakeEngine) ContainerAttach(_ context.Context, id string, _ dockercontainer.AttachOptions) (types.HijackedResponse, error) {
	f.record("ContainerAttach")
	client, server := pipe(f.t)
	f.mu.Lock()
	f.containers[id].conn = server
	f.mu.Unlock()
	return types.NewHijackedResponse(client, ""), nil
}

func (f *fakeEngine) ContainerWait(_ context.Context, id string, cond dockercontainer.WaitCondition) (<-chan dockercontainer.WaitResponse, <-chan error) {
	f.record("ContainerWait %s", cond)
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan dockercontainer.WaitResponse, 1)
	f.containers[id].waiters = append(f.containers[id].waiters, ch)
	return ch, make(chan error)
}

// runInit runs the simulated init on conn and returns its status.
func (f *fakeEngine) runInit(conn net.Conn) int {
	defer conn.Close()
	r := bufio.NewReader(conn)
	typ, p, err := wire.ReadFrame(r)
	if err == io.EOF && f.noHello {
		return 125
	}
	if err != nil || typ != wire.FrameHello {
		f.t.Errorf("first frame: %c %v", typ, err)
		return 125
	}
	h, _ := wire.ParseHello(p)
	f.mu.Lock()
	f.hellos = append(f.hellos, h)
	f.events = append(f.events, "hello")
	f.mu.Unlock()
	stderr := stdcopy.NewStdWriter(conn, stdcopy.Stderr)
	code := f.init(h, r, stdcopy.NewStdWriter(conn, stdcopy.Stdout), stderr)
	f.mu.Lock()
	noEnd := f.noEnd
	f.mu.Unlock()
	if h.End != "" && !noEnd {
		_, _ = io.WriteString(stderr, wire.EndMarker(h.End))
	}
	return code
}

func (f *fakeEngine) ContainerPause(context.Context, string) error {
	return errors.New("fakeEngine: unexpected ContainerPause")
}

func (f *fakeEngine) ContainerUnpause(context.Context, string) error {
	return errors.New("fakeEngine: unexpected ContainerUnpause")
}

func (f *fakeEngine) ContainerStart(_ context.Context, id string, _ dockercontainer.StartOptions) error {
	f.mu.Lock()
	c := f.containers[id]
	c.running = true
	f.mu.Unlock()
	role := c.cfg.Labels[LabelRole]
	if role == "" {
		f.record("ContainerStart")
	}
	if c.conn == nil { // a kept container: its keeper idles
		return nil
	}
	run := f.runInit
	if role == roleCompanion {
		run = f.runCompanion
	}
	go func() {
		code := run(c.conn)
		f.mu.Lock()
		defer f.mu.Unlock()
		c.running = false
		if role == roleCompanion && c.host.AutoRemove { // the fake removes only these (their removal is awaited)
			delete(f.containers, c.id)
			delete(f.containers, c.name)
		}
		for _, w := range c.waiters {
			w <- dockercontainer.WaitResponse{StatusCode: int64(code)}
		}
	}()
	return nil
}

// runCompanion simulates devsandbox-proxy companion on conn: it reads the request,
// answers the ready line and one audit record, and exits 0 at the end of its stdin.
func (f *fakeEngine) runCompanion(conn net.Conn) int {
	defer conn.Close()
	r := bufio.NewReader(conn)
	req, err := companion.ReadRequest(r)
	if err != nil {
		f.t.Errorf("companion request: %v", err)
		return 2
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.events = append(f.events, "companion ready")
	f.mu.Unlock()
	out := stdcopy.NewStdWriter(conn, stdcopy.Stdout)
	fmt.Fprintf(out, "%s\n{\"kind\":\"request\",\"session\":%q,\"host\":\"h.test\",\"decision\":\"deny\"}\n", companion.ReadyLine, req.Session)
	_, _ = io.Copy(io.Discard, r)
	return 0
}

func (f *fakeEngine) ContainerRemove(_ context.Context, id string, _ dockercontainer.RemoveOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok {
		return cerrdefs.ErrNotFound
	}
	if c.name != "" && c.cfg.Labels[LabelRole] == "" {
		f.calls = append(f.calls, "ContainerRemove")
	}
	delete(f.containers, c.id)
	delete(f.containers, c.name)
	return nil
}

func (f *fakeEngine) CopyToContainer(_ context.Context, id, dir string, content io.Reader, _ dockercontainer.CopyToContainerOptions) error {
	f.mu.Lock()
	c := f.containers[id]
	f.mu.Unlock()
	if c.name != "" {
		f.t.Errorf("a copy into the container %s: only a derived image's or the mask volume's container is copied into", c.name)
	}
	tr := tar.NewReader(content)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		b, _ := io.ReadAll(tr)
		// A content volume's file is the sandbox user's (git checks a worktree's
		// `.git` file's owner); everything else copied is root's.
		owner := h.Uid == 0 && h.Gid == 0
		if h.Name == contentFile {
			owner = h.Uid == 1000 && h.Gid == 1000
		}
		dirMode := int64(0o755)
		if h.Name == "tmp/" {
			dirMode = 0o1777 // the tmpfs mounted there takes this mode
		}
		if !owner || h.Mode&0o222 != 0 && h.Typeflag != tar.TypeDir || h.Mode != dirMode && h.Typeflag == tar.TypeDir {
			f.t.Errorf("%s copied with uid %d gid %d mode %o", h.Name, h.Uid, h.Gid, h.Mode)
		}
		f.mu.Lock()
		f.copied[id+":"+path.Join(dir, h.Name)] = b
		f.mu.Unlock()
	}
	return nil
}

func (f *fakeEngine) VolumeCreate(_ context.Context, o volume.CreateOptions) (volume.Volume, error) {
	if o.Name != maskVolume {
		f.record("VolumeCreate %s", o.Name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.volumes[o.Name]; ok {
		o = v // an engine answers with the volume as it is
	}
	f.volumes[o.Name] = o
	return volume.Volume{Name: o.Name, Driver: cmp.Or(o.Driver, "local"), Options: o.DriverOpts, Labels: o.Labels, Mountpoint: "/engine/volumes/" + o.Name + "/_data"}, nil
}

func (f *fakeEngine) VolumeInspect(_ context.Context, name string) (volume.Volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.volumes[name]
	if !ok {
		return volume.Volume{}, cerrdefs.ErrNotFound
	}
	return volume.Volume{Name: name, Labels: o.Labels, Mountpoint: "/engine/volumes/" + name + "/_data"}, nil
}

func (f *fakeEngine) VolumeRemove(_ context.Context, name string, _ bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.volumes, name)
	return nil
}

// VolumeList finds no leftovers (like ContainerList, not part of the transcripts).
func (f *fakeEngine) VolumeList(context.Context, volume.ListOptions) (volume.ListResponse, error) {
	return volume.ListResponse{Volumes: f.listed}, nil
}

// ContainerList finds no leftovers (it is not part of the transcripts: it runs
// concurrently with the command).
func (f *fakeEngine) ContainerList(_ context.Context, o dockercontainer.ListOptions) ([]dockercontainer.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if o.Filters.Contains("status") {
		f.sweeps++ // a sweep's first listing
	}
	var out []dockercontainer.Summary
	if o.Filters.Len() == 0 { // every container, with its image (prune's imageUsers)
		for _, c := range f.created {
			if _, alive := f.containers[c.id]; alive {
				out = append(out, dockercontainer.Summary{ID: c.id, ImageID: c.cfg.Image})
			}
		}
	}
	for _, img := range o.Filters.Get("ancestor") {
		for _, c := range f.created {
			if _, alive := f.containers[c.id]; alive && c.cfg.Image == img {
				out = append(out, dockercontainer.Summary{ID: c.id})
			}
		}
	}
	return out, nil
}

func (f *fakeEngine) ImageList(context.Context, image.ListOptions) ([]image.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []image.Summary
	for id, in := range f.derived {
		// Made 40 days ago: older than prune's default --days.
		// Named once the engine recorded a naming (ImageTag; a loaded image).
		var tags []string
		if !in.Metadata.LastTagTime.IsZero() {
			tags = []string{loadTag(strings.TrimPrefix(id, "sha256:"))}
		}
		out = append(out, image.Summary{ID: id, Labels: in.Config.Labels, RepoTags: tags, Created: time.Now().Add(-40 * 24 * time.Hour).Unix()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// ImageTag names the image id: the engine records the time (Metadata.LastTagTime).
func (f *fakeEngine) ImageTag(_ context.Context, id, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	in, ok := f.derived[id]
	if !ok {
		return cerrdefs.ErrNotFound
	}
	in.Metadata.LastTagTime = time.Now()
	f.derived[id] = in
	return nil
}

func (f *fakeEngine) ImageRemove(_ context.Context, id string, _ image.RemoveOptions) ([]image.DeleteResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.derived, id)
	delete(f.images, id)
	return nil, nil
}

func (f *fakeEngine) ContainerInspect(_ context.Context, id string) (dockercontainer.InspectResponse, error) {
	f.record("ContainerInspect %s", id)
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok {
		return dockercontainer.InspectResponse{}, cerrdefs.ErrNotFound
	}
	var mounts []dockercontainer.MountPoint
	if c.host != nil {
		for _, m := range c.host.Mounts {
			mounts = append(mounts, dockercontainer.MountPoint{Type: m.Type, Source: m.Source, Destination: m.Target, RW: !m.ReadOnly})
		}
	}
	return dockercontainer.InspectResponse{ContainerJSONBase: &dockercontainer.ContainerJSONBase{ID: c.id, Image: c.cfg.Image, State: &dockercontainer.State{Running: c.running}, ExecIDs: c.execIDs},
		Config: c.cfg, Mounts: mounts}, nil
}

func (f *fakeEngine) ContainerExecCreate(_ context.Context, id string, opts dockercontainer.ExecOptions) (dockercontainer.ExecCreateResponse, error) {
	f.record("ContainerExecCreate %s", strings.Join(opts.Cmd[:4], " "))
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	switch {
	case !ok:
		return dockercontainer.ExecCreateResponse{}, fmt.Errorf("no such container %s: %w", id, cerrdefs.ErrNotFound)
	case !c.running:
		return dockercontainer.ExecCreateResponse{}, fmt.Errorf("container %s is not running: %w", id, cerrdefs.ErrConflict)
	}
	f.nextID++
	x := &fakeExec{id: fmt.Sprintf("x%d", f.nextID), c: c, cmd: opts.Cmd}
	f.execs[x.id] = x
	x.c.execIDs = append(x.c.execIDs, x.id)
	return dockercontainer.ExecCreateResponse{ID: x.id}, nil
}

func (f *fakeEngine) ContainerExecAttach(_ context.Context, id string, _ dockercontainer.ExecAttachOptions) (types.HijackedResponse, error) {
	f.record("ContainerExecAttach")
	client, server := pipe(f.t)
	f.mu.Lock()
	x := f.execs[id]
	x.running = true
	ended := f.endedExec
	if slices.Contains(x.cmd, "--role=end") {
		x.running, x.code = false, f.endCode
		f.mu.Unlock()
		server.Close()
		return types.NewHijackedResponse(client, ""), nil
	}
	f.mu.Unlock()
	if ended != nil {
		code := ended(x.cmd, stdcopy.NewStdWriter(server, stdcopy.Stdout), stdcopy.NewStdWriter(server, stdcopy.Stderr))
		server.Close()
		f.mu.Lock()
		x.running, x.code = false, code
		f.mu.Unlock()
		return types.NewHijackedResponse(client, ""), nil
	}
	go func() {
		code := f.runInit(server)
		f.mu.Lock()
		x.running, x.code = false, code
		f.mu.Unlock()
	}()
	return types.NewHijackedResponse(client, ""), nil
}

func (f *fakeEngine) ContainerExecInspect(_ context.Context, id string) (dockercontainer.ExecInspect, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.execs[id]
	return dockercontainer.ExecInspect{ExecID: id, Running: x.running, ExitCode: x.code}, nil
}

// testIsolator returns a docker Isolator on f and a plan whose host paths are in a
// temporary directory.
func testIsolator(t *testing.T, f *fakeEngine, keep bool) (*Isolator, *isolator.Plan) {
	dir := t.TempDir()
	p := basePlan()
	p.Project.Dir, p.Workdir = filepath.Join(dir, "proj"), filepath.Join(dir, "proj")
	p.SandboxHome, p.StateDir, p.EmptyFile = filepath.Join(dir, "share/app/home"), filepath.Join(dir, "state/app"), filepath.Join(dir, "state/empty")
	p.PrivateDirs = []string{p.SandboxHome}
	p.Mounts = []isolator.Mount{
		{Kind: isolator.Bind, Source: p.SandboxHome, Dest: home},
		{Kind: isolator.Bind, Source: p.Project.Dir, Dest: p.Project.Dir},
	}
	if err := os.MkdirAll(p.Project.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p.Secrets = []isolator.Secret{{Name: "API_TOKEN", EnvSource: "API_TOKEN"}}
	p.HostEnv = map[string]string{"API_TOKEN": "s3cret"}
	b := &Isolator{Options: Options{Image: "devsandbox/default:1.0", Home: home, Version: "1.0", Keep: keep}}
	b.dial = func() (Engine, Address, error) { return f, Address{Host: "unix:///fake.sock", Origin: "test"}, nil }
	// No dockerd listens at the fake socket: a Unix socket counts as this machine's
	// engine, a tcp:// one as elsewhere (TestHostNetwork covers the real question).
	b.network = func(a Address) engineaddr.Network { return engineaddr.Network{Here: a.Local()} }
	b.ship = func(_ *isolator.Plan, _ func() (string, error), proxy bool) (programs, error) {
		return programs{arch: "amd64", init: program{data: []byte("INIT")}, proxy: program{data: []byte("PROXY")}}, nil
	}
	b.Progress = io.Discard
	b.services = func(*isolator.Plan) (*hostsvc.Services, error) { return nil, nil }
	return b, p
}

// A run creates, attaches, waits and starts, in that order; the secret travels in the
// hello frame only; the command's output and status come back.
func TestRunOnce(t *testing.T) {
	f := newFake(t)
	b, p := testIsolator(t, f, false)
	p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.MaskFile, Dest: p.Project.Dir + "/.env"})
	var out, errb strings.Builder
	code, err := b.Run(context.Background(), p, isolator.Stdio{Out: &out, Err: &errb})
	if err != nil || code != 3 {
		t.Fatalf("Run: %d %v (stderr %q)", code, err, errb.String())
	}
	// The volume of the container's /etc/hosts (it has no network), made once.
	want := []string{"VolumeCreate " + hostsVolume, "ContainerCreate devsandbox-app-0123abcd (run)", "ContainerAttach", "ContainerWait removed", "ContainerStart"}
	if !reflect.DeepEqual(f.calls, want) {
		t.Errorf("calls:\n%q\nwant\n%q", f.calls, want)
	}
	if out.String() != "hello from the command\n" || errb.String() != "" {
		t.Errorf("stdout %q, stderr %q", out.String(), errb.String())
	}
	if len(f.hellos) != 1 || f.hellos[0].Env["API_TOKEN"] != "s3cret" {
		t.Errorf("hello: %+v", f.hellos)
	}
	c := f.containers["c1"]
	for _, e := range c.cfg.Env {
		if strings.Contains(e, "s3cret") {
			t.Errorf("secret in the container config: %s", e)
		}
	}
	if !c.host.AutoRemove || !c.cfg.StdinOnce || !c.cfg.OpenStdin {
		t.Errorf("one-shot container: AutoRemove %v StdinOnce %v OpenStdin %v", c.host.AutoRemove, c.cfg.StdinOnce, c.cfg.OpenStdin)
	}
	if c.cfg.Image != "sha256:derived1" || string(copiedTo(f.copied, InitPath)) != "INIT" {
		t.Errorf("the run's image %s, not the derived image with the init at %s: %v", c.cfg.Image, InitPath, f.copied)
	}
	noHostBinds(t, c.host, p)
	masked := false
	for _, m := range c.host.Mounts {
		masked = masked || m.Target == p.Project.Dir+"/.env" && m.Source == "/engine/volumes/devsandbox-mask/_data/empty" && m.ReadOnly
	}
	if copiedTo(f.copied, "/m/empty") == nil || !masked {
		t.Errorf("the mask is not the engine's empty file (%v): %v", masked, c.host.Mounts)
	}
}

// noHostBinds fails unless every bind of hc is the project, the sandbox home or the
// engine's mask file (DESIGN guarantee 11), and nothing covers the image's
// /run/devsandbox.
// contentBind reports whether m binds the file of a content volume (engine-side,
// devsandbox's own, read-only): the /etc/hosts of a container with no network.
func contentBind(m mount.Mount) bool {
	name, ok := strings.CutPrefix(m.Source, "/engine/volumes/")
	if !ok {
		name, ok = strings.CutPrefix(m.Source, localVolumes)
	}
	name, ok2 := strings.CutSuffix(name, "/_data/"+contentFile)
	return ok && ok2 && m.ReadOnly && strings.HasPrefix(name, "devsandbox-") && strings.Contains(name, "-content-")
}

// copiedTo is what the fake engine took at path in a container, whichever (the
// helpers' containers are made concurrently, their IDs in no fixed order).
func copiedTo(copied map[string][]byte, path string) []byte {
	for k, v := range copied {
		if _, p, _ := strings.Cut(k, ":"); p == path {
			return v
		}
	}
	return nil
}

// hostsVolume is the content volume of the test project's /etc/hosts (container.LoopbackHosts).
const hostsVolume = "devsandbox-app-0123abcd-content-518c94e9e0d38fc7"

func noHostBinds(t *testing.T, hc *dockercontainer.HostConfig, p *isolator.Plan) {
	t.Helper()
	for _, m := range hc.Mounts {
		switch {
		case m.Target == "/run" || m.Target == "/run/devsandbox":
			t.Errorf("a %s mount at %s covers the derived image's files", m.Type, m.Target)
		case m.Type == mount.TypeBind && m.Source != p.Project.Dir && !strings.HasPrefix(m.Source, p.Project.Dir+"/") &&
			m.Source != p.SandboxHome && m.Source != "/engine/volumes/devsandbox-mask/_data/empty" && !contentBind(m):
			t.Errorf("a bind of the host's %s at %s", m.Source, m.Target)
		}
	}
	if len(hc.Binds) > 0 || len(hc.Tmpfs["/run"]) > 0 {
		t.Errorf("binds %q, tmpfs %q", hc.Binds, hc.Tmpfs)
	}
}

// The init's failure report makes Run fail with ErrProtection: the command did not run.
func TestRunOnceInitFails(t *testing.T) {
	f := newFake(t)
	f.init = func(_ *wire.Hello, _ io.Reader, _, stderr io.Writer) int {
		fmt.Fprint(stderr, wire.FailMarker("mask /p/.env is writable"))
		return 125
	}
	b, p := testIsolator(t, f, false)
	var errb strings.Builder
	_, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: &errb})
	if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "mask /p/.env is writable") {
		t.Fatalf("Run: %v", err)
	}
}

// replaceDir replaces the directory dir by another of the same name, made first: it
// cannot get the removed one's inode number.
func replaceDir(dir string) error {
	if err := os.Mkdir(dir+".new", 0o755); err != nil {
		return err
	}
	if err := os.Remove(dir); err != nil {
		return err
	}
	return os.Rename(dir+".new", dir)
}

// startFails fails the start of the run's container as an engine that could not mount
// an anchor from its descriptor does, after it calls before.
type startFails struct {
	*fakeEngine
	before func()
}

// errAnchorMount is a local engine's answer to a start whose anchor's pinned
// directory was removed.
const errAnchorMount = "Error response from daemon: error while mounting volume '/var/lib/docker/volumes/1caa/_data': failed to mount local volume: mount /proc/16227/fd/23:/var/lib/docker/volumes/1caa/_data, flags: 0x1000: no such file or directory"

func (s *startFails) ContainerStart(ctx context.Context, id string, o dockercontainer.StartOptions) error {
	s.mu.Lock()
	c := s.containers[id]
	s.mu.Unlock()
	if c.name == "" || c.cfg.Labels[LabelRole] != "" {
		return s.fakeEngine.ContainerStart(ctx, id, o)
	}
	s.before()
	return errors.New(errAnchorMount)
}

// A setup failure after a bind source was replaced on the host since Run pinned it
// (the init's refusal of what the engine mounted, the engine's failure to start the
// container) names the source and the race, and keeps the failure without
// devsandbox's guesses at its cause (the start's about engines that cannot mount
// anchors); with every source in place, the failure as it is told otherwise.
func TestRunOnceSourceGone(t *testing.T) {
	for _, at := range []string{"init", "start"} {
		for _, replace := range []bool{false, true} {
			data := filepath.Join(t.TempDir(), "data")
			if err := os.Mkdir(data, 0o755); err != nil {
				t.Fatal(err)
			}
			race := func() {
				if replace {
					if err := replaceDir(data); err != nil {
						t.Error(err)
					}
				}
			}
			f := newFake(t)
			b, p := testIsolator(t, f, false)
			var failure, guess string
			switch at {
			case "init":
				p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: data, Dest: data})
				f.init = func(_ *wire.Hello, _ io.Reader, _, stderr io.Writer) int {
					race()
					fmt.Fprint(stderr, wire.FailMarker("rw "+data+" is not the file devsandbox opened for it"))
					return 125
				}
				failure = "protection could not be applied: rw " + data + " is not the file devsandbox opened for it; the command did not run"
			case "start":
				// An anchor, which an engine of API 1.41 mounts from the directory pinned.
				p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: data, Dest: data, Anchor: true})
				g := &startFails{fakeEngine: f, before: race}
				b.dial = func() (Engine, Address, error) { return g, Address{Host: "unix:///fake.sock", Origin: "test"}, nil }
				failure = "protection could not be applied: the docker engine could not start the container: " + errAnchorMount + "; the command did not run"
				guess = anchorHint(&Spec{Anchored: true}) + ". `devsandbox --dry-run` shows the container"
			}
			_, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard})
			if !errors.Is(err, isolator.ErrProtection) || isolator.IsUnavailable(err) {
				t.Errorf("%s (source replaced: %v): Run: %v, want a protection's failure", at, replace, err)
				continue
			}
			want := failure + guess
			if replace {
				want = "protection could not be applied: " + data + " was removed or replaced on the host while the sandbox was being set up, so the docker engine could not mount it as devsandbox checked it, and the command did not run: run it again once it is back, or without what binds it. The failure: " + failure
			}
			if err.Error() != want {
				t.Errorf("%s (source replaced: %v): Run:\n%v\nwant\n%s", at, replace, err, want)
			}
		}
	}
}

// sourceGoneEngine removes a directory when the run's container is created, and refuses
// it as an engine does whose bind source is missing. With keep set, it refuses it
// without removing it (an engine that cannot see the path).
type sourceGoneEngine struct {
	*fakeEngine
	dir  string
	keep bool
}

func (g *sourceGoneEngine) ContainerCreate(ctx context.Context, cfg *dockercontainer.Config, host *dockercontainer.HostConfig, nc *network.NetworkingConfig, pl *ocispec.Platform, name string) (dockercontainer.CreateResponse, error) {
	if name == "" {
		return g.fakeEngine.ContainerCreate(ctx, cfg, host, nc, pl, name)
	}
	if !g.keep {
		if err := os.Remove(g.dir); err != nil {
			return dockercontainer.CreateResponse{}, err
		}
	}
	return dockercontainer.CreateResponse{}, fmt.Errorf("Error response from daemon: invalid mount config for type \"bind\": bind source path does not exist: %s: %w", g.dir, cerrdefs.ErrInvalidArgument)
}

// An engine elsewhere, which pins nothing, refusing a bind source removed on this host
// after the run began: not an engine that cannot see the path (an unavailable
// isolator, which sandbox.mode = auto would run unsandboxed, and the wrong fix), the
// source named and the engine's own answer. Refusing a source still there, it is that
// engine.
func TestRunRemoteSourceGone(t *testing.T) {
	for _, removed := range []bool{false, true} {
		f := newFake(t)
		b, p := testIsolator(t, f, false)
		data := filepath.Join(t.TempDir(), "data")
		if err := os.Mkdir(data, 0o755); err != nil {
			t.Fatal(err)
		}
		g := &sourceGoneEngine{fakeEngine: f, dir: data, keep: !removed}
		b.dial = func() (Engine, Address, error) {
			return g, Address{Host: "tcp://10.0.0.2:2376", Origin: "docker.host", TLS: "DOCKER_CERT_PATH /certs"}, nil
		}
		f.listed = []*volume.Volume{{Name: "devsandbox-" + p.Project.Name + "-home"}}
		p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: data, Dest: data})
		_, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard})
		if !removed {
			want := "isolator unavailable: the docker engine at tcp://10.0.0.2:2376 (docker.host) cannot see " + data + ", the mount at " + data + ", on its machine; share the directory with the engine (Docker Desktop: Settings > Resources > File sharing), or run devsandbox where the engine runs; the command did not run"
			if !isolator.IsUnavailable(err) || err.Error() != want {
				t.Errorf("Run with the source in place:\n%v\nwant an unavailable isolator:\n%s", err, want)
			}
			continue
		}
		want := "protection could not be applied: " + data + " was removed or replaced on the host while the sandbox was being set up, so the docker engine could not mount it as devsandbox checked it, and the command did not run: run it again once it is back, or without what binds it. The failure: isolator unavailable: the docker engine refused the container: Error response from daemon: invalid mount config for type \"bind\": bind source path does not exist: " + data + ": invalid argument; the command did not run"
		if !errors.Is(err, isolator.ErrProtection) || isolator.IsUnavailable(err) || !errors.Is(err, cerrdefs.ErrInvalidArgument) || err == nil || err.Error() != want {
			t.Errorf("Run:\n%v\nwant a protection's failure:\n%s", err, want)
		}
	}
}

// keep_container: a source removed on the host while the kept container is made (the
// engine refuses its bind) or replaced before its exec's init checks it is named, as
// for a one-shot container, and the run is a protection's failure (not an engine that
// cannot see the path, which mode auto would run unsandboxed).
func TestRunKeptSourceGone(t *testing.T) {
	for _, at := range []string{"create", "init"} {
		f := newFake(t)
		b, p := testIsolator(t, f, true)
		data := filepath.Join(t.TempDir(), "data")
		if err := os.Mkdir(data, 0o755); err != nil {
			t.Fatal(err)
		}
		p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: data, Dest: data})
		var failure string
		switch at {
		case "create":
			g := &sourceGoneEngine{fakeEngine: f, dir: data}
			b.dial = func() (Engine, Address, error) { return g, Address{Host: "unix:///fake.sock", Origin: "test"}, nil }
			failure = "isolator unavailable: the docker engine refused the container: Error response from daemon: invalid mount config for type \"bind\": bind source path does not exist: " + data + ": invalid argument; the command did not run"
		case "init":
			f.init = func(_ *wire.Hello, _ io.Reader, _, stderr io.Writer) int {
				if err := replaceDir(data); err != nil {
					t.Error(err)
				}
				fmt.Fprint(stderr, wire.FailMarker("rw "+data+" is not the file devsandbox opened for it"))
				return 125
			}
			failure = "protection could not be applied: rw " + data + " is not the file devsandbox opened for it; the command did not run"
		}
		_, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard})
		want := "protection could not be applied: " + data + " was removed or replaced on the host while the sandbox was being set up, so the docker engine could not mount it as devsandbox checked it, and the command did not run: run it again once it is back, or without what binds it. The failure: " + failure
		if !errors.Is(err, isolator.ErrProtection) || isolator.IsUnavailable(err) || err == nil || err.Error() != want {
			t.Errorf("%s: Run:\n%v\nwant a protection's failure:\n%s", at, err, want)
		}
	}
}

// A missing image is an unavailable isolator, with the command that builds it.
func TestRunMissingImage(t *testing.T) {
	f := newFake(t)
	b, p := testIsolator(t, f, false)
	b.Image = "devsandbox/default:2.0"
	_, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard})
	if !errors.Is(err, isolator.ErrUnavailable) || !strings.Contains(err.Error(), "devsandbox image build") {
		t.Fatalf("Run: %v", err)
	}
	// With a file mask, whose engine-side source is made from the image first.
	p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.MaskFile, Dest: p.Project.Dir + "/.env"})
	_, err = b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard})
	if !errors.Is(err, isolator.ErrUnavailable) || !strings.Contains(err.Error(), "devsandbox image build") {
		t.Fatalf("Run with a mask: %v", err)
	}
}

// keep_container: the first run creates and starts the kept container and execs into
// it; the second, with the same spec, only execs; a changed spec recreates it, unless
// an exec is running.
func TestRunKept(t *testing.T) {
	f := newFake(t)
	b, p := testIsolator(t, f, true)
	run := func() (int, error) {
		f.calls = nil
		return b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard})
	}
	exec := []string{"ContainerExecCreate /run/devsandbox/init --container --framed --role=session", "ContainerExecAttach"}
	if code, err := run(); err != nil || code != 3 {
		t.Fatalf("first run: %d %v", code, err)
	}
	want := append([]string{"ContainerInspect devsandbox-app-0123abcd", "VolumeCreate " + hostsVolume, "ContainerCreate devsandbox-app-0123abcd (kept)", "ContainerStart"}, exec...)
	if !reflect.DeepEqual(f.calls, want) {
		t.Errorf("first run:\n%q\nwant\n%q", f.calls, want)
	}
	f.mu.Lock()
	f.derives = nil
	f.mu.Unlock()
	if code, err := run(); err != nil || code != 3 {
		t.Fatalf("warm run: %d %v", code, err)
	}
	if want := append([]string{"ContainerInspect devsandbox-app-0123abcd"}, exec...); !reflect.DeepEqual(f.calls, want) {
		t.Errorf("warm run:\n%q\nwant\n%q", f.calls, want)
	}
	// The derived image is not looked up again: the running kept container was made
	// from it. The base image is (a moved tag makes another derived image).
	if want := []string{"ImageInspect devsandbox/default:1.0"}; !reflect.DeepEqual(f.derives, want) {
		t.Errorf("warm run's image lookups: %q, want %q", f.derives, want)
	}
	// Stopped, it proves nothing: the derived image is looked up.
	f.mu.Lock()
	f.containers["devsandbox-app-0123abcd"].running = false
	f.derives = nil
	f.mu.Unlock()
	if code, err := run(); err != nil || code != 3 {
		t.Fatalf("run in a stopped kept container: %d %v", code, err)
	}
	if len(f.derives) != 2 || !strings.HasPrefix(f.derives[1], "ImageInspect sha256:derived") {
		t.Errorf("stopped kept container's image lookups: %q", f.derives)
	}
	for _, e := range f.containers["devsandbox-app-0123abcd"].cfg.Env {
		if strings.Contains(e, "s3cret") || strings.HasPrefix(e, "LANG=") {
			t.Errorf("per-run value in the kept container's config: %s", e)
		}
	}

	// Another configuration while an exec runs: refused.
	p.Egress = egress.Rules{Mode: egress.Open}
	f.mu.Lock()
	f.execs["x2"].running = true
	f.mu.Unlock()
	if _, err := run(); !errors.Is(err, ErrSpecChanged) {
		t.Fatalf("changed spec with a session attached: %v", err)
	}
	f.mu.Lock()
	f.execs["x2"].running = false
	f.mu.Unlock()
	if _, err := run(); err != nil {
		t.Fatalf("changed spec: %v", err)
	}
	// The inspect made as the run started shows another spec: the container is looked
	// at again under the lock before it is removed.
	want = append([]string{"ContainerInspect devsandbox-app-0123abcd", "ContainerInspect devsandbox-app-0123abcd", "ContainerRemove", "ContainerCreate devsandbox-app-0123abcd (kept)", "ContainerStart"}, exec...)
	if !reflect.DeepEqual(f.calls, want) {
		t.Errorf("changed spec:\n%q\nwant\n%q", f.calls, want)
	}
}

// The kept container's inspect is made as the run starts, before the project's lock
// is taken: a concurrent run may change the container before this one execs. The
// exec goes only into a container seen running with this run's spec, by its id; when
// that container is gone or stopped by then, or when none was seen but one was made
// meanwhile, the container is looked at again under the lock.
func TestRunKeptStaleInspect(t *testing.T) {
	f := newFake(t)
	b, p := testIsolator(t, f, true)
	stdio := isolator.Stdio{Out: io.Discard, Err: io.Discard}
	if code, err := b.Run(context.Background(), p, stdio); err != nil || code != 3 {
		t.Fatalf("first run: %d %v", code, err)
	}
	name := "devsandbox-app-0123abcd"
	seen, err := f.ContainerInspect(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	// The spec the runs made: the kept container's, with the exec a render makes.
	rendered, err := containerConfig(p, engineOptions(p, b.Options))
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	made := f.containers[name]
	f.mu.Unlock()
	spec := &Spec{Name: name, Config: made.cfg, Host: made.host, Network: rendered.Network, Exec: rendered.Exec, Hash: made.cfg.Labels[LabelSpec]}
	answered := func(in dockercontainer.InspectResponse, err error) *future[dockercontainer.InspectResponse] {
		return fetch(func() (dockercontainer.InspectResponse, error) { return in, err })
	}
	keptExec := func(ahead *future[dockercontainer.InspectResponse]) string {
		t.Helper()
		f.calls = nil
		id, _, _, err := b.keptExec(context.Background(), f, Address{Host: "unix:///fake.sock"}, p, spec, ahead)
		if err != nil {
			t.Fatalf("keptExec: %v (%q)", err, f.calls)
		}
		return id
	}
	exec := "ContainerExecCreate /run/devsandbox/init --container --framed --role=session"
	// Seen running with this spec: no second look.
	if id := keptExec(answered(seen, nil)); id != seen.ID || !reflect.DeepEqual(f.calls, []string{exec}) {
		t.Errorf("warm: %s %q", id, f.calls)
	}
	// Removed and made again by another run since it was seen: the exec into the old
	// id fails; the new container is found under the lock.
	remove(context.Background(), f, seen.ID)
	if code, err := b.Run(context.Background(), p, stdio); err != nil || code != 3 {
		t.Fatalf("run: %d %v", code, err)
	}
	now, _ := f.ContainerInspect(context.Background(), name)
	if id := keptExec(answered(seen, nil)); id != now.ID || id == seen.ID ||
		!reflect.DeepEqual(f.calls, []string{exec, "ContainerInspect " + name, exec}) {
		t.Errorf("after a recreation: %s (was %s) %q", id, seen.ID, f.calls)
	}
	// Stopped since: started again under the lock.
	f.mu.Lock()
	f.containers[name].running = false
	f.mu.Unlock()
	if id := keptExec(answered(now, nil)); id != now.ID || !reflect.DeepEqual(f.calls, []string{exec, "ContainerInspect " + name, "ContainerStart", exec}) {
		t.Errorf("after a stop: %s %q", id, f.calls)
	}
	// None seen, but made meanwhile: the name is taken, and the container is found.
	if id := keptExec(answered(dockercontainer.InspectResponse{}, cerrdefs.ErrNotFound)); id != now.ID ||
		!reflect.DeepEqual(f.calls, []string{"ContainerCreate " + name + " (kept)", "ContainerInspect " + name, exec}) {
		t.Errorf("made meanwhile: %s %q", id, f.calls)
	}
	// Seen with another spec: looked at again, not trusted.
	other := seen
	other.Config = &dockercontainer.Config{Labels: map[string]string{LabelSpec: "another"}}
	other.ID = now.ID
	if id := keptExec(answered(other, nil)); id != now.ID || !reflect.DeepEqual(f.calls, []string{"ContainerInspect " + name, exec}) {
		t.Errorf("another spec seen: %s %q", id, f.calls)
	}
}

// Egress proxy with a published port: the session's
// companion gets the proxy (in the derived image), the policy and the secrets on its stdin (in
// no config), publishes the port on the engine host's 127.0.0.1 and shares the
// endpoint volume with the sandbox, which binds nothing else of the host's; the
// sandbox's hello waits for the companion's ready line; its audit records reach the
// project's log; the session's volume and the companion are gone afterwards.
func TestRunCompanion(t *testing.T) {
	f := newFake(t)
	b, p := testIsolator(t, f, false)
	p.Egress = egress.Rules{Mode: egress.Proxy, Proxy: egress.Endpoint{Unix: "/run/x/proxy-5e55.sock"}, SocketDir: "/run/x",
		PublishDir: "/run/x/publish-5e55", Forwards: []egress.Forward{{HostPort: 18080, SandboxPort: 3000}}}
	p.Proxy = isolator.ProxyConfig{Session: "5e55", Default: "deny",
		Credentials: []isolator.ProxyCredential{{Name: "GH", Host: "api.github.com", Header: "Authorization", ValueEnv: "GH_TOKEN"}}}
	p.HostEnv["GH_TOKEN"] = "ghp_s3cret"
	code, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard})
	if err != nil || code != 3 {
		t.Fatalf("Run: %d %v", code, err)
	}
	var comp, sandbox *fakeContainer
	for _, c := range f.created {
		switch c.cfg.Labels[LabelRole] {
		case roleCompanion:
			comp = c
		case "":
			sandbox = c
		}
	}
	if comp == nil {
		t.Fatal("no companion")
	}
	if _, ok := f.containers[comp.id]; ok {
		t.Errorf("the companion outlived the run")
	}
	for _, e := range append(append(comp.cfg.Env, comp.cfg.Cmd...), mapValues(comp.cfg.Labels)...) {
		if strings.Contains(e, "ghp_s3cret") {
			t.Errorf("the credential in the companion's config: %s", e)
		}
	}
	if comp.cfg.Image != sandbox.cfg.Image || string(copiedTo(f.copied, "/run/devsandbox/devsandbox-proxy")) != "PROXY" || comp.cfg.Entrypoint[0] != "/run/devsandbox/devsandbox-proxy" {
		t.Errorf("the companion does not run devsandbox-proxy of the derived image (%s, %q): %v", comp.cfg.Image, comp.cfg.Entrypoint, f.copied)
	}
	if len(f.volumes) != 1 || f.volumes[hostsVolume].Name == "" {
		t.Errorf("volumes left: %v, want only %s", f.volumes, hostsVolume)
	}
	if len(f.requests) != 1 || f.requests[0].Secrets["DEVSANDBOX_CREDENTIAL_0"] != "ghp_s3cret" || len(f.requests[0].Publish) != 1 {
		t.Fatalf("the companion's requests: %+v", f.requests)
	}
	if !reflect.DeepEqual(f.events, []string{"companion ready", "hello"}) {
		t.Errorf("events %q: the hello must wait for the companion", f.events)
	}
	if sandbox == nil {
		t.Fatal("no sandbox container")
	}
	noHostBinds(t, sandbox.host, p)
	for _, e := range append(append(sandbox.cfg.Env, sandbox.cfg.Cmd...), mapValues(sandbox.cfg.Labels)...) {
		if strings.Contains(e, "ghp_s3cret") {
			t.Errorf("the credential in the sandbox's config: %s", e)
		}
	}
	recs, err := audit.ReadLog(p.StateDir, audit.LogFilter{})
	if err != nil || len(recs) != 1 || recs[0].Host != "h.test" || recs[0].Session != "5e55" {
		t.Errorf("audit log: %+v %v", recs, err)
	}
}

// The companion's config: devsandbox-proxy as the user, no capability, its policy
// and secrets nowhere in it, the endpoint volume, the published ports on the engine
// host's 127.0.0.1 only. The sandbox's: the endpoint volume, no host sockets.
func TestCompanionConfig(t *testing.T) {
	p := basePlan()
	p.Egress = egress.Rules{Mode: egress.Proxy, Forwards: []egress.Forward{{HostPort: 18080, SandboxPort: 3000}}}
	p.Proxy.Session = "5e55"
	cfg, hc := companionConfig(p, "img", nil, "vol", map[string]string{LabelProject: "0123abcd", LabelUser: "1000"}, true)
	if cfg.User != "1000:1000" || !slices.Equal(cfg.Entrypoint, []string{"/run/devsandbox/devsandbox-proxy"}) || !slices.Equal(cfg.Cmd, []string{"companion"}) || len(cfg.Env) != 0 {
		t.Errorf("companion config: %+v", cfg)
	}
	if !cfg.OpenStdin || !cfg.StdinOnce || !hc.AutoRemove || !slices.Equal(hc.CapDrop, []string{"ALL"}) || !slices.Equal(hc.Binds, []string{"vol:/ep"}) || len(hc.CapAdd) != 0 {
		t.Errorf("companion host config: %+v", hc)
	}
	if b := hc.PortBindings["18080/tcp"]; len(b) != 1 || b[0].HostIP != "127.0.0.1" || b[0].HostPort != "18080" {
		t.Errorf("port bindings: %+v", hc.PortBindings)
	}
	if cfg.Labels[LabelRole] != roleCompanion || cfg.Labels[LabelSession] != "5e55" || cfg.Labels[LabelProject] != "0123abcd" {
		t.Errorf("labels: %v", cfg.Labels)
	}
	p.Egress.PublishDir, p.Egress.Proxy.Unix, p.Egress.SocketDir = "/run/x/publish-5e55", "/run/x/proxy-5e55.sock", "/run/x"
	o := opts
	o.Shipped, o.EndpointVolume = true, "vol"
	spec, err := containerConfig(p, o)
	if err != nil {
		t.Fatal(err)
	}
	noHostBinds(t, spec.Host, p)
	ep := false
	for _, m := range spec.Host.Mounts {
		ep = ep || m.Type == mount.TypeVolume && m.Source == "vol" && m.Target == EndpointDir
	}
	if !ep {
		t.Errorf("the endpoint volume is not mounted: %+v", spec.Host.Mounts)
	}
}

// The kept container's companion: no published port (the engine would hold it for as
// long as the container lives), no session, its main process waiting, no stdin (each
// session's request reaches its own exec), kept, and a spec label that changes with
// the image but not with the session or its policy.
func TestKeptCompanionConfig(t *testing.T) {
	p := basePlan()
	p.Egress = egress.Rules{Mode: egress.Proxy, Forwards: []egress.Forward{{HostPort: 18080, SandboxPort: 3000}}}
	p.Proxy.Session = "5e55"
	labels := map[string]string{LabelProject: "0123abcd", LabelUser: "1000", LabelVersion: "v1"}
	cfg, hc := keptCompanionConfig(p, "img", nil, "vol", labels)
	if !slices.Equal(cfg.Cmd, []string{"companion", "hold"}) || cfg.OpenStdin || cfg.AttachStdin || hc.AutoRemove {
		t.Errorf("kept companion: %+v %+v", cfg, hc)
	}
	if len(hc.PortBindings) != 0 || len(cfg.ExposedPorts) != 0 {
		t.Errorf("the kept companion publishes %v", hc.PortBindings)
	}
	if cfg.Labels[LabelSession] != "" || cfg.Labels[LabelKept] != "true" || cfg.Labels[LabelRole] != roleCompanion || cfg.Labels[LabelSpec] == "" {
		t.Errorf("labels: %v", cfg.Labels)
	}
	q := basePlan()
	q.Egress = egress.Rules{Mode: egress.Allowlist}
	q.Proxy.Session = "6e66"
	if c2, _ := keptCompanionConfig(q, "img", nil, "vol", labels); c2.Labels[LabelSpec] != cfg.Labels[LabelSpec] {
		t.Errorf("another session or policy changes the kept companion's spec")
	}
	if c3, _ := keptCompanionConfig(p, "img2", nil, "vol", labels); c3.Labels[LabelSpec] == cfg.Labels[LabelSpec] {
		t.Errorf("another image keeps the kept companion's spec")
	}
}

// The derived image is made once and then used by its ID from the cache; the run
// says so on stderr only when it makes one; an image gone from the engine, or one
// whose labels do not match, is made again; another base image gets its own.
func TestDerivedImageCached(t *testing.T) {
	f := newFake(t)
	b, p := testIsolator(t, f, false)
	var progress strings.Builder
	b.Progress = &progress
	commits := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		n := 0
		for _, c := range f.derives {
			if c == "ContainerCommit" {
				n++
			}
		}
		return n
	}
	image := func() string { return f.created[len(f.created)-1].cfg.Image }
	run := func() {
		t.Helper()
		if _, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard}); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if commits() != 1 || image() != "sha256:derived1" || strings.Count(progress.String(), "preparing the image devsandbox/default:1.0") != 1 {
		t.Fatalf("first run: %d commits, image %s, progress %q", commits(), image(), progress.String())
	}
	labels := f.derived["sha256:derived1"].Config.Labels
	if labels[LabelBase] != "sha256:base-devsandbox/default:1.0" || labels[LabelBaseRef] != "devsandbox/default:1.0" || labels[LabelVersion] != "1.0" || labels[LabelUser] != "1000" || len(labels[LabelContent]) != 32 {
		t.Errorf("labels %v", labels)
	}
	run()
	if commits() != 1 || image() != "sha256:derived1" || strings.Count(progress.String(), "preparing") != 1 {
		t.Fatalf("cached run: %d commits, image %s, progress %q", commits(), image(), progress.String())
	}
	// A label that does not match (another version made it): made again.
	f.derived["sha256:derived1"].Config.Labels[LabelVersion] = "0.9"
	run()
	if commits() != 2 || image() != "sha256:derived2" {
		t.Fatalf("mismatched labels: %d commits, image %s", commits(), image())
	}
	delete(f.derived, "sha256:derived2")
	run()
	if commits() != 3 || image() != "sha256:derived3" {
		t.Fatalf("image gone: %d commits, image %s", commits(), image())
	}
	f.images["other:1"] = true
	b.Image = "other:1"
	run()
	if commits() != 4 || f.derived[image()].Config.Labels[LabelBase] != "sha256:base-other:1" {
		t.Fatalf("another base: %d commits, image %s", commits(), image())
	}
	b.Image = "devsandbox/default:1.0"
	run()
	if commits() != 4 || image() != "sha256:derived3" {
		t.Fatalf("back to the first base: %d commits, image %s", commits(), image())
	}
	// The same engine by another address: the image cached under the first is found
	// (after the same check) and recorded under this one too.
	other := func() (Engine, Address, error) { return f, Address{Host: "unix:///other.sock", Origin: "test"}, nil }
	first := b.dial
	b.dial = other
	run()
	if commits() != 4 || image() != "sha256:derived3" {
		t.Fatalf("another address of the engine: %d commits, image %s", commits(), image())
	}
	// Gone from the engine: made again, once, and found by either address.
	delete(f.derived, "sha256:derived3")
	run()
	if commits() != 5 || image() != "sha256:derived5" {
		t.Fatalf("image gone, by the other address: %d commits, image %s", commits(), image())
	}
	b.dial = first
	run()
	if commits() != 5 || image() != "sha256:derived5" {
		t.Fatalf("back to the first address: %d commits, image %s", commits(), image())
	}
	// A cached ID whose image has other labels is not used under any address.
	f.derived["sha256:derived5"].Config.Labels[LabelVersion] = "0.9"
	b.dial = other
	run()
	if commits() != 6 || image() != "sha256:derived6" {
		t.Fatalf("mismatched labels, by the other address: %d commits, image %s", commits(), image())
	}
}

// Prune removes the derived images from a base whose name now names another image (or
// none) at once, and those of another version (or of this one) that no run used within
// --days (none recorded: made before it); it keeps the one a run used (Run records it),
// one another version's run used recently, and any a container uses; with dryRun it
// removes nothing.
func TestPruneImages(t *testing.T) {
	f := newFake(t)
	b, p := testIsolator(t, f, false)
	run := func() {
		t.Helper()
		if _, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard}); err != nil {
			t.Fatal(err)
		}
	}
	run() // derived1: current
	f.images["other:1"] = true
	b.Image = "other:1"
	run() // derived2: from other:1
	b.Image = "devsandbox/default:1.0"
	f.derived["sha256:derived3"] = image.InspectResponse{ID: "sha256:derived3", Config: &dockerspec.DockerOCIImageConfig{ImageConfig: ocispec.ImageConfig{Labels: map[string]string{
		LabelBase: "sha256:base-devsandbox/default:1.0", LabelBaseRef: "devsandbox/default:1.0", LabelVersion: "0.9", LabelUser: "1000"}}}}
	f.derived["sha256:derived4"] = image.InspectResponse{ID: "sha256:derived4", Config: &dockerspec.DockerOCIImageConfig{ImageConfig: ocispec.ImageConfig{Labels: map[string]string{
		LabelBase: "sha256:base-devsandbox/default:1.0", LabelBaseRef: "devsandbox/default:1.0", LabelVersion: "0.9", LabelUser: "1000"}}}}
	f.derived["sha256:derived5"] = image.InspectResponse{ID: "sha256:derived5", Config: &dockerspec.DockerOCIImageConfig{ImageConfig: ocispec.ImageConfig{Labels: map[string]string{
		LabelBase: "sha256:base-devsandbox/default:1.0", LabelBaseRef: "devsandbox/default:1.0", LabelVersion: "0.9", LabelUser: "1000"}}}}
	// Loaded 3 days ago, no use of it recorded: its Created is its base's (40 days ago
	// here), the engine's record of its naming is its load's time.
	f.derived["sha256:derived6"] = image.InspectResponse{ID: "sha256:derived6", Metadata: image.Metadata{LastTagTime: time.Now().Add(-72 * time.Hour)},
		Config: &dockerspec.DockerOCIImageConfig{ImageConfig: ocispec.ImageConfig{Labels: map[string]string{
			LabelBase: "sha256:base-devsandbox/default:1.0", LabelBaseRef: "devsandbox/default:1.0", LabelVersion: "0.9", LabelUser: "1000"}}}}
	stateRoot := filepath.Dir(p.StateDir)
	if err := imageuse.Record(stateRoot, imageuse.Docker, "sha256:derived5", time.Now().Add(-50*time.Hour)); err != nil {
		t.Fatal(err)
	}
	f.containers = map[string]*fakeContainer{} // the runs' containers are gone
	f.containers["user"] = &fakeContainer{id: "user", cfg: &dockercontainer.Config{Image: "sha256:derived4"}}
	f.created = append(f.created, f.containers["user"])
	delete(f.images, "other:1") // its base is gone
	f.lists = 0
	lines, err := b.PruneImages(context.Background(), 1000, stateRoot, 30*24*time.Hour, true)
	if err != nil || len(f.derived) != 6 {
		t.Fatalf("dry run: %v, %d images left, %q", err, len(f.derived), lines)
	}
	if m := readRecords(filepath.Join(stateRoot, derivedCacheFile)); len(m) != 2 || !slices.Contains(lines, "would remove an entry of "+filepath.Join(stateRoot, derivedCacheFile)+": the image derived2 (derived from base-other:1) on unix:///fake.sock, which this prune would remove") {
		t.Errorf("dry run: the cache %v, lines %q", m, lines)
	}
	if f.lists != 1 { // not one per image: an engine holds hundreds
		t.Errorf("prune listed the containers %d times for 6 images, want once", f.lists)
	}
	lines, err = b.PruneImages(context.Background(), 1000, stateRoot, 30*24*time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	_, kept1 := f.derived["sha256:derived1"]
	_, kept4 := f.derived["sha256:derived4"]
	_, kept5 := f.derived["sha256:derived5"]
	_, kept6 := f.derived["sha256:derived6"]
	if len(f.derived) != 4 || !kept1 || !kept4 || !kept5 || !kept6 {
		t.Errorf("left %v after %q", f.derived, lines)
	}
	want := []string{"kept image derived1 (devsandbox/default:1.0): derived from it by this devsandbox (1.0), but a run used it just now",
		"removed image derived2 (other:1): its base other:1 is gone",
		"removed image derived3 (devsandbox/default:1.0): made by devsandbox 0.9, this is 1.0, no use of it is recorded and it was made 40 days ago",
		"kept image derived4 (devsandbox/default:1.0): made by devsandbox 0.9, this is 1.0, but 1 container(s) use it",
		"kept image derived5 (devsandbox/default:1.0): made by devsandbox 0.9, this is 1.0, but a run used it 2 days ago",
		"kept image derived6 (devsandbox/default:1.0): made by devsandbox 0.9, this is 1.0, but it was made 3 days ago (no use of it is recorded yet)",
		// The derived-image cache's entry of the image removed goes with it.
		"removed an entry of " + filepath.Join(stateRoot, derivedCacheFile) + ": the image derived2 (derived from base-other:1) on unix:///fake.sock, which this prune removed"}
	if !slices.Equal(lines, want) {
		t.Errorf("lines\n%q\nwant\n%q", lines, want)
	}
	if m := readRecords(filepath.Join(stateRoot, derivedCacheFile)); !slices.Equal(slices.Collect(maps.Values(m)), []string{"sha256:derived1"}) {
		t.Errorf("the cache after prune: %v", m)
	}
}

// The kept companion's inspect is asked for as the run starts, before the companion
// lock is taken (ahead.go): it is trusted only when it shows the companion running
// with this run's spec. An answer that would remove or make a companion is looked at
// again under the lock, so a stale one never removes a companion another session
// made meanwhile (nor the one running another session's proxy).
func TestKeptCompanionEarlyInspect(t *testing.T) {
	f := newFake(t)
	b, p := testIsolator(t, f, true)
	p.Egress = egress.Rules{Mode: egress.Proxy}
	labels := map[string]string{LabelProject: p.Project.ID, LabelName: p.Project.Name, LabelDir: p.Project.Dir, LabelVersion: "1.0", LabelUser: "1000"}
	f.images["img"] = true
	cfg, hc := keptCompanionConfig(p, "img", nil, "vol", labels)
	name := keptCompanionName(p)
	ctx := context.Background()
	made, err := b.keptCompanion(ctx, f, p, cfg, hc, false)
	if err != nil {
		t.Fatal(err)
	}
	seen, err := f.ContainerInspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	early := func(in dockercontainer.InspectResponse, err error) Engine {
		f.calls = nil
		return &aheadEngine{Engine: f, containers: map[string]*future[dockercontainer.InspectResponse]{
			name: fetch(func() (dockercontainer.InspectResponse, error) { return in, err }),
		}}
	}
	created := len(f.created)
	// Seen running with this spec: used, no second look.
	if id, err := b.keptCompanion(ctx, early(seen, nil), p, cfg, hc, true); err != nil || id != made || len(f.calls) != 0 {
		t.Errorf("running with this spec: %s %v %q", id, err, f.calls)
	}
	// Seen with another spec (it has been made again since) or not at all (made
	// since): looked at again, and the companion there is used.
	other := seen
	other.Config = &dockercontainer.Config{Labels: map[string]string{LabelSpec: "another"}}
	for what, e := range map[string]Engine{
		"another spec":  early(other, nil),
		"none":          early(dockercontainer.InspectResponse{}, cerrdefs.ErrNotFound),
		"engine failed": early(dockercontainer.InspectResponse{}, errors.New("timeout")),
	} {
		f.calls = nil
		if id, err := b.keptCompanion(ctx, e, p, cfg, hc, true); err != nil || id != made || !reflect.DeepEqual(f.calls, []string{"ContainerInspect " + name}) {
			t.Errorf("%s seen: %s %v %q", what, id, err, f.calls)
		}
	}
	if len(f.created) != created {
		t.Errorf("a stale inspect made a companion: %d created, want %d", len(f.created), created)
	}
	if _, ok := f.containers[made]; !ok {
		t.Errorf("a stale inspect removed the companion")
	}
}

// A kept session's command starts before its hello reaches the init only when the
// hello carries nothing and nothing must be ready first; the flag goes to the exec's
// init, not into the kept container's spec.
func TestStartFirst(t *testing.T) {
	open := func(f func(p *isolator.Plan)) *isolator.Plan {
		p := basePlan()
		p.Egress = egress.Rules{Mode: egress.Open}
		if f != nil {
			f(p)
		}
		return p
	}
	for name, tc := range map[string]struct {
		p     *isolator.Plan
		h     *wire.Hello
		bound bool
		want  bool
	}{
		"open, empty hello": {open(nil), &wire.Hello{}, false, true},
		"egress none":       {open(func(p *isolator.Plan) { p.Egress = egress.Rules{Mode: egress.None} }), &wire.Hello{}, false, true},
		"a secret":          {open(nil), &wire.Hello{Env: map[string]string{"T": "x"}}, false, false},
		"a secret file":     {open(nil), &wire.Hello{Files: map[string][]byte{"k": nil}}, false, false},
		"a terminal":        {open(nil), &wire.Hello{TTY: true}, false, false},
		"one stream":        {open(nil), &wire.Hello{OneStream: true}, false, false},
		"a memory limit":    {open(func(p *isolator.Plan) { p.Limits.Memory = 1 << 30 }), &wire.Hello{}, false, false},
		"egress proxy":      {open(func(p *isolator.Plan) { p.Egress = egress.Rules{Mode: egress.Proxy} }), &wire.Hello{}, false, false},
		"egress allowlist":  {open(func(p *isolator.Plan) { p.Egress = egress.Rules{Mode: egress.Allowlist} }), &wire.Hello{}, false, false},
		"a published port": {open(func(p *isolator.Plan) {
			p.Egress.Forwards = []egress.Forward{{HostPort: 18080, SandboxPort: 3000}}
		}), &wire.Hello{}, false, false},
		"an ssh agent over the stream": {open(func(p *isolator.Plan) {
			p.SSHAgent = isolator.AgentRelay{Upstream: "/tmp/agent.sock", Socket: "/run/x/agent/s.sock"}
		}), &wire.Hello{}, false, false},
		"an ssh agent bound": {open(func(p *isolator.Plan) {
			p.SSHAgent = isolator.AgentRelay{Upstream: "/tmp/agent.sock", Socket: "/run/x/agent/kept/s.sock"}
		}), &wire.Hello{}, true, true},
	} {
		if got := startFirst(tc.p, tc.h, tc.bound); got != tc.want {
			t.Errorf("%s: startFirst %v, want %v", name, got, tc.want)
		}
	}
	p := open(nil)
	o := opts
	o.Keep = true
	spec, err := containerConfig(p, o)
	if err != nil {
		t.Fatal(err)
	}
	before := slices.Clone(spec.Exec.Cmd)
	s := withStartFirst(spec)
	i := slices.Index(before, "--")
	want := append(append(slices.Clone(before[:i]), wire.StartFirstArg), before[i:]...)
	if !reflect.DeepEqual(s.Exec.Cmd, want) || !reflect.DeepEqual(spec.Exec.Cmd, before) || s.Hash != spec.Hash || s.Config != spec.Config {
		t.Errorf("withStartFirst: %q (was %q, now %q), hash %s (was %s)", s.Exec.Cmd, before, spec.Exec.Cmd, s.Hash, spec.Hash)
	}
}

// goneEngine is an engine that stopped answering, or one that answers only its
// version (versionOK), failing every other request the same way.
type goneEngine struct {
	*fakeEngine
	versionOK bool
}

var errGone = errors.New("cannot connect to the docker daemon at unix:///fake.sock")

func (g *goneEngine) ServerVersion(ctx context.Context) (types.Version, error) {
	if g.versionOK {
		return g.fakeEngine.ServerVersion(ctx)
	}
	return types.Version{}, errGone
}

func (g *goneEngine) Ping(ctx context.Context) (types.Ping, error) {
	if g.versionOK {
		return g.fakeEngine.Ping(ctx)
	}
	return types.Ping{}, errGone
}

func (g *goneEngine) ImageInspect(context.Context, string, ...client.ImageInspectOption) (image.InspectResponse, error) {
	return image.InspectResponse{}, errGone
}

func (g *goneEngine) VolumeInspect(context.Context, string) (volume.Volume, error) {
	return volume.Volume{}, errGone
}

// A run whose preparation fails because the engine does not answer says so (the
// address, where it came from, what to do) as an unavailable isolator, whichever
// request met it first — on a new project, preparing a file mask's volume — so that
// mode auto and isolator auto can act on it; an engine that answers leaves the
// failure as it was, and so does a run that was cancelled.
func TestRunEngineDoesNotAnswer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		versionOK bool
		cancel    bool
		want      error
		text      string
	}{
		{"gone", false, false, isolator.ErrUnavailable,
			"isolator unavailable: the docker engine at unix:///fake.sock (test) does not answer: " + errGone.Error() + "; " + startHint},
		{"answers", true, false, isolator.ErrProtection, "preparing the source of file masks"},
		{"cancelled", false, true, isolator.ErrProtection, "preparing the source of file masks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &goneEngine{fakeEngine: newFake(t), versionOK: tc.versionOK}
			b, p := testIsolator(t, g.fakeEngine, false)
			b.dial = func() (Engine, Address, error) { return g, Address{Host: "unix:///fake.sock", Origin: "test"}, nil }
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.MaskFile, Dest: p.Project.Dir + "/.env"})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				cancel()
			}
			_, err := b.Run(ctx, p, isolator.Stdio{Out: io.Discard, Err: io.Discard})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("Run: %v\nwant %v with %q", err, tc.want, tc.text)
			}
			if tc.want == isolator.ErrUnavailable && err.Error() != tc.text {
				t.Errorf("Run:\n got %v\nwant %s", err, tc.text)
			}
		})
	}
}

// A cancelled run stops its command as bwrap's does: SIGTERM to the command through
// the init (a frame), and the command's own status; one that ignores SIGTERM has its
// session ended after the stop grace (the init, its stream ended, kills it: 137).
// When the caller is gone (handoff.ErrCallerGone) the stream ends at once, without
// SIGTERM. Kept containers (an exec) take the same path.
func TestRunCancelStops(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keep    bool
		ignores bool
		gone    bool
		want    int
		frames  string
	}{
		{name: "sigterm", want: 143, frames: "SIGTERM"},
		{name: "ignores sigterm", ignores: true, want: 137, frames: "SIGTERM"},
		{name: "caller gone", gone: true},
		{name: "kept", keep: true, want: 143, frames: "SIGTERM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			started := make(chan struct{})
			var mu sync.Mutex
			var frames []string
			f.init = func(_ *wire.Hello, in io.Reader, _, stderr io.Writer) int {
				fmt.Fprint(stderr, wire.ReadyMarker)
				close(started)
				for {
					typ, p, err := wire.ReadFrame(in)
					if err != nil {
						return 137 // the stream ended: the init kills the command
					}
					if typ == wire.FrameSignal && len(p) == 1 {
						mu.Lock()
						frames = append(frames, syscall.Signal(p[0]).String())
						mu.Unlock()
						if syscall.Signal(p[0]) == syscall.SIGTERM && !tc.ignores {
							return 143
						}
					}
				}
			}
			b, p := testIsolator(t, f, tc.keep)
			b.StopGrace = 50 * time.Millisecond
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			go func() {
				<-started
				if tc.gone {
					cancel(handoff.ErrCallerGone)
				} else {
					cancel(context.Canceled)
				}
			}()
			code, err := b.Run(ctx, p, isolator.Stdio{Out: io.Discard, Err: io.Discard})
			// With the caller gone, nobody reads the status: the stream (and with it
			// the init's report) ends at once.
			if !tc.gone && (err != nil || code != tc.want) {
				t.Fatalf("Run = %d, %v; want %d", code, err, tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if want := strings.Fields(strings.ReplaceAll(tc.frames, "SIGTERM", syscall.SIGTERM.String())); strings.Join(frames, ",") != strings.Join(want, ",") {
				t.Errorf("signals the init got: %q, want %q", frames, want)
			}
		})
	}
}

// rendezvousEngine holds the inspect of one volume until a derived image's build
// has begun (its container's creation), and fails the test when that never comes.
type rendezvousEngine struct {
	*fakeEngine
	volume string
	once   sync.Once
	built  chan struct{}
}

func (r *rendezvousEngine) ContainerCreate(ctx context.Context, cfg *dockercontainer.Config, host *dockercontainer.HostConfig, nc *network.NetworkingConfig, pl *ocispec.Platform, name string) (dockercontainer.CreateResponse, error) {
	if name == "" {
		r.once.Do(func() { close(r.built) })
	}
	return r.fakeEngine.ContainerCreate(ctx, cfg, host, nc, pl, name)
}

func (r *rendezvousEngine) VolumeInspect(ctx context.Context, name string) (volume.Volume, error) {
	if name == r.volume {
		select {
		case <-r.built:
		case <-time.After(30 * time.Second):
			r.t.Errorf("the volume %s was asked for only after the image was prepared, not beside it", name)
		}
	}
	return r.fakeEngine.VolumeInspect(ctx, name)
}

// The content volume of a file anchor (a repository's .git/config) is known only
// once its file is read; it is asked for while the image is prepared, not after.
func TestRunContentBesideImage(t *testing.T) {
	f := newFake(t)
	b, p := testIsolator(t, f, false)
	cfg := filepath.Join(p.Project.Dir, "config")
	content := []byte("[core]\n\tbare = false\n")
	if err := os.WriteFile(cfg, content, 0o644); err != nil {
		t.Fatal(err)
	}
	p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: cfg, Dest: cfg, Why: "git metadata", Anchor: true, ReadOnly: true})
	name := contentVolume(p.Project.Name, content, false)
	f.volumes[name] = volume.CreateOptions{Name: name, Labels: map[string]string{LabelRole: roleContent, LabelUser: fmt.Sprint(p.User.UID)}}
	r := &rendezvousEngine{fakeEngine: f, volume: name, built: make(chan struct{})}
	b.dial = func() (Engine, Address, error) { return r, Address{Host: "unix:///fake.sock", Origin: "test"}, nil }
	if code, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard}); err != nil || code != 3 {
		t.Fatalf("Run: %d %v", code, err)
	}
	var bound bool
	for _, m := range f.created[len(f.created)-1].host.Mounts {
		bound = bound || (m.Target == cfg && m.Source == "/engine/volumes/"+name+"/_data/"+contentFile && m.ReadOnly)
	}
	if !bound {
		t.Errorf("%s is not bound from its content volume: %+v", cfg, f.created[len(f.created)-1].host.Mounts)
	}
}

// pairEngine holds the inspect of volume first until volume second was asked for,
// and fails the test when that never comes.
type pairEngine struct {
	*fakeEngine
	first, second string
	asked         chan struct{}
}

func (e *pairEngine) VolumeInspect(ctx context.Context, name string) (volume.Volume, error) {
	switch name {
	case e.second:
		close(e.asked)
	case e.first:
		select {
		case <-e.asked:
		case <-time.After(30 * time.Second):
			e.t.Errorf("the volume %s was asked for only after %s was answered, not beside it", e.second, e.first)
		}
	}
	return e.fakeEngine.VolumeInspect(ctx, name)
}

// The content volumes of a layout are asked for together.
func TestContentSourcesTogether(t *testing.T) {
	f := newFake(t)
	p := basePlan()
	contents := [][]byte{[]byte("Host *\n"), []byte("[core]\n")}
	l := &container.Layout{}
	var names []string
	for i, c := range contents {
		name := contentVolume(p.Project.Name, c, false)
		names = append(names, name)
		f.volumes[name] = volume.CreateOptions{Name: name, Labels: map[string]string{LabelRole: roleContent, LabelUser: fmt.Sprint(p.User.UID)}}
		l.Contents = append(l.Contents, container.ImageFile{Path: fmt.Sprintf("/f%d", i), Content: c})
	}
	e := &pairEngine{fakeEngine: f, first: names[0], second: names[1], asked: make(chan struct{})}
	got, err := contentSources(context.Background(), e, p, "devsandbox/default:1.0", l)
	want := map[string]string{names[0]: "/engine/volumes/" + names[0] + "/_data/" + contentFile, names[1]: "/engine/volumes/" + names[1] + "/_data/" + contentFile}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("contentSources = %v, %v; want %v", got, err, want)
	}
}

// A session's exec keeps its one-P start (the GOMAXPROCS=1 and the argument that
// removes it) only where the running container's environment is known to set no
// GOMAXPROCS: an image's own would otherwise be replaced by 1 and then removed
// before the command starts.
func TestSessionExecGOMAXPROCS(t *testing.T) {
	x := dockercontainer.ExecOptions{
		Env: []string{"HOME=/home/u", wire.InitGOMAXPROCS, "M=1"},
		Cmd: []string{"/init", "--container", wire.UnsetGOMAXPROCSArg, "--", "sh", wire.UnsetGOMAXPROCSArg},
	}
	stripped := dockercontainer.ExecOptions{
		Env: []string{"HOME=/home/u", "M=1"},
		Cmd: []string{"/init", "--container", "--", "sh", wire.UnsetGOMAXPROCSArg},
	}
	for name, tc := range map[string]struct {
		x    dockercontainer.ExecOptions
		env  []string
		want dockercontainer.ExecOptions
	}{
		"a warm run, no GOMAXPROCS in the container": {x, []string{"PATH=/bin", "GOMAXPROCSX=2"}, x},
		"the image sets GOMAXPROCS":                  {x, []string{"PATH=/bin", "GOMAXPROCS=4"}, stripped},
		"the container's environment not known":      {x, nil, stripped},
		"the run set GOMAXPROCS (no argument)":       {stripped, nil, stripped},
	} {
		before := slices.Clone(tc.x.Env)
		got := sessionExec(tc.x, tc.env)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q %q, want %q %q", name, got.Env, got.Cmd, tc.want.Env, tc.want.Cmd)
		}
		if !reflect.DeepEqual(tc.x.Env, before) {
			t.Errorf("%s: changed its argument's environment: %q", name, tc.x.Env)
		}
	}
}

// discardingEngine creates the run's container as an engine without the cgroup
// controllers does: with a warning that it dropped the limits.
type discardingEngine struct {
	*fakeEngine
	warning string
}

func (d *discardingEngine) ContainerCreate(ctx context.Context, cfg *dockercontainer.Config, host *dockercontainer.HostConfig, nc *network.NetworkingConfig, pl *ocispec.Platform, name string) (dockercontainer.CreateResponse, error) {
	r, err := d.fakeEngine.ContainerCreate(ctx, cfg, host, nc, pl, name)
	if err == nil && name != "" && cfg.Labels[LabelRole] == "" {
		r.Warnings = append(r.Warnings, d.warning)
	}
	return r, err
}

// An engine that drops limits.pids, limits.memory or limits.cpus says so only in a
// warning on the create: the run fails as a protection that could not be applied,
// the container removed, the command never started (DESIGN: fail closed). A kept
// container is created on another path (createKept): it is held to the same.
func TestRunLimitsDiscardedRefused(t *testing.T) {
	for _, keep := range []bool{false, true} {
		for _, w := range []string{
			"Your kernel does not support pids limit capabilities or the cgroup is not mounted. PIDs limit discarded.",
			"Your kernel does not support memory limit capabilities or the cgroup is not mounted. Limitation discarded.",
		} {
			f := newFake(t)
			b, p := testIsolator(t, f, keep)
			p.Limits = isolator.Limits{Pids: 4096, Memory: 1 << 30}
			d := &discardingEngine{fakeEngine: f, warning: w}
			b.dial = func() (Engine, Address, error) { return d, Address{Host: "unix:///fake.sock", Origin: "test"}, nil }
			_, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard})
			if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "cannot apply the sandbox's limits") || !strings.Contains(err.Error(), w) {
				t.Errorf("keep %v, warning %q: Run = %v, want the limits' refusal", keep, w, err)
			}
			if slices.Contains(f.calls, "ContainerStart") || slices.ContainsFunc(f.calls, func(c string) bool { return strings.HasPrefix(c, "ContainerExecCreate") }) || len(f.hellos) > 0 {
				t.Errorf("keep %v, warning %q: the container started (calls %q)", keep, w, f.calls)
			}
			if !slices.Contains(f.calls, "ContainerRemove") {
				t.Errorf("keep %v, warning %q: the container was not removed (calls %q)", keep, w, f.calls)
			}
		}
	}
}

// A kept session whose init did not report that nothing of the session runs any
// more (its command killed or stopped it) is ended by the keeper, through an exec of
// the init's role end naming the session's id, before the run returns (and before
// the watch's last check); a run whose keeper cannot confirm it fails.
func TestRunKeptSessionEndConfirmed(t *testing.T) {
	f := newFake(t)
	b, p := testIsolator(t, f, true)
	if code, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard}); err != nil || code != 3 {
		t.Fatalf("a run whose init reports its end: %d %v", code, err)
	}
	if slices.ContainsFunc(f.calls, func(c string) bool { return strings.Contains(c, "--role=end") }) {
		t.Errorf("the keeper was asked to end a session its init reported ended: %q", f.calls)
	}
	f.mu.Lock()
	// Only this run's execs: f.execs is a map, so a session exec of the first run
	// could be the one found below (1 run in 7 before).
	f.noEnd, f.calls, f.execs = true, nil, map[string]*fakeExec{}
	f.mu.Unlock()
	if code, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard}); err != nil || code != 3 {
		t.Fatalf("a run whose init did not report its end, confirmed by the keeper: %d %v", code, err)
	}
	want := []string{"ContainerInspect devsandbox-app-0123abcd", "ContainerExecCreate /run/devsandbox/init --container --framed --role=session",
		"ContainerExecAttach", "ContainerExecCreate /run/devsandbox/init --container --role=end --", "ContainerExecAttach"}
	if !reflect.DeepEqual(f.calls, want) {
		t.Errorf("calls:\n%q\nwant\n%q", f.calls, want)
	}
	f.mu.Lock()
	var session, end []string
	for _, x := range f.execs {
		switch {
		case slices.Contains(x.cmd, "--role=session"):
			session = x.cmd
		case slices.Contains(x.cmd, "--role=end"):
			end = x.cmd
		}
	}
	f.endCode, f.calls = 1, nil
	f.mu.Unlock()
	id := end[len(end)-1]
	if !slices.Contains(session, wire.SessionIDArg+id) {
		t.Errorf("the end exec names session %q; the session's exec: %q", id, session)
	}
	if _, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard}); !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "could not be confirmed ended") {
		t.Fatalf("a run whose session's end the keeper did not confirm: %v", err)
	}
}
