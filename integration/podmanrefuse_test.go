//go:build integration

package integration

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestPodmanRefusedByEveryCommand: every devsandbox command that reaches the docker
// engine, pointed at podman's Docker-compatible service (the test user's, with the
// image and a planted kept container and home volume of the project in its storage),
// is refused: a run (one-shot, and kept with the proxy: a kept container's reuse),
// `sandboxes list`, `sandboxes rm`, `sandboxes prune`, `image build` exit 125 naming
// podman and the other isolators, and doctor's engine row says so. Podman is reached
// three ways: at its own Unix socket (its listener tells), and through a relay on a
// Unix socket and at a tcp:// address (only its answers tell): each relay logs the
// requests it passes on, and nothing but the negotiating ping may reach podman. What
// podman holds (containers, volumes, images) is the same after every command. On
// base, only the run was refused (at one point of it): the other commands listed
// podman's containers and volumes, rm removed the planted container, image build
// sent its build, and a kept run's first inspects reached podman behind a relay.
func TestPodmanRefusedByEveryCommand(t *testing.T) {
	if !slices.Contains(isolators(), localDocker) {
		t.Skip("docker is not among DEVSANDBOX_IT_ISOLATORS")
	}
	requireEngine(t, localDocker)
	ip := newIsolatedPodman(t)
	const img = "devsandbox-test/busybox:1"
	ip.loadImage(t, img)
	p := newProject(t)
	name := p.name()
	id := name[strings.LastIndexByte(name, '-')+1:]
	labels := []string{"--label", "dev.devsandbox.project=" + id, "--label", "dev.devsandbox.name=" + name,
		"--label", "dev.devsandbox.uid=" + strconv.Itoa(it.uid), "--label", "dev.devsandbox.dir=" + p.dir}
	// What devsandbox would take for its own: the project's kept container (stopped)
	// and its home volume.
	ip.podman(t, append(append([]string{"create", "--name", "devsandbox-" + name}, labels...), "--label", "dev.devsandbox.kept=true", "localhost/"+img, "sleep", "600")...)
	ip.podman(t, append(append([]string{"volume", "create"}, labels...), "devsandbox-"+name+"-home")...)
	before := ip.state(t)

	unixRelay, unixLog := loggingRelay(t, "unix", ip.sock)
	tcpRelay, tcpLog := loggingRelay(t, "tcp", ip.sock)
	for _, way := range []struct {
		name, host string
		log        *requestLog // nil: podman's own socket, nothing in between
	}{
		{"socket", "unix://" + ip.sock, nil},
		{"relay", "unix://" + unixRelay, unixLog},
		{"tcp", "tcp://" + tcpRelay, tcpLog},
	} {
		t.Run(way.name, func(t *testing.T) {
			env := append([]string{"DOCKER_HOST=" + way.host}, ip.xdg(t, way.name)...)
			image := "--image=localhost/" + img
			for _, c := range []struct {
				what string
				args []string
			}{
				{"a one-shot run", []string{"--isolator=docker", image, "--egress=none", "--", "/bin/sh", "-c", "echo ran"}},
				{"a kept run with the proxy", []string{"--isolator=docker", image, "--keep-container", "--egress=proxy", "--", "/bin/sh", "-c", "echo ran"}},
				{"sandboxes list", []string{"sandboxes", "list"}},
				{"sandboxes list --json", []string{"sandboxes", "list", "--json"}},
				{"sandboxes rm", []string{"sandboxes", "rm", name}},
				{"sandboxes prune", []string{"sandboxes", "prune", "--days=0", "--dry-run"}},
				{"image build", []string{"image", "build", "--base=localhost/" + img, "--tag=devsandbox-podrefuse:t"}},
			} {
				way.log.reset()
				r := run(t, p.dir, env, "", c.args...)
				t.Logf("%s at %s: exit %d: %s", c.what, way.host, r.code, strings.TrimSpace(r.stderr))
				if r.code != 125 || strings.Contains(r.stdout, name) || !refusesPodman(r.stderr, way.host) {
					t.Errorf("%s on podman's service at %s: want it refused (125) naming podman and --isolator krun / bwrap, listing nothing:\n%s", c.what, way.host, r)
				}
				if got := way.log.notPing(); len(got) > 0 {
					t.Errorf("%s on podman's service at %s: requests other than the ping reached podman: %q", c.what, way.host, got)
				}
				if after := ip.state(t); after != before {
					t.Errorf("%s on podman's service at %s changed what podman holds:\nbefore:\n%s\nafter:\n%s", c.what, way.host, before, after)
				}
			}
			// A dry run renders without asking the engine anything.
			way.log.reset()
			if r := run(t, p.dir, env, "", "--isolator=docker", image, "--dry-run", "--", "true"); len(way.log.all()) > 0 {
				t.Errorf("a dry run at %s sent podman %q:\n%s", way.host, way.log.all(), r)
			}
			way.log.reset()
			r := run(t, p.dir, env, "", "--isolator=docker", image, "doctor")
			if r.code == 0 || !refusesPodman(r.stdout, way.host) {
				t.Errorf("doctor on podman's service at %s: want its docker engine row to refuse it, naming podman and --isolator krun / bwrap:\n%s", way.host, r)
			}
			if got := way.log.notPing(); len(got) > 0 {
				t.Errorf("doctor on podman's service at %s: requests other than the ping reached podman: %q", way.host, got)
			}
		})
	}
}

// TestEngineAnsweringPingWrongRefused: DOCKER_HOST at a listener that answers HTTP but
// not as a Docker engine does (its ping, HEAD /_ping, answered 404 with no
// Api-Version header; or 200 with none): every command that reaches the engine is
// refused (125) naming the address and the fix, and nothing but the ping is sent to
// it. On base a failed negotiating ping was followed by the client's own ping (HEAD,
// then GET) and the run's requests, and the commands went on to list and create.
func TestEngineAnsweringPingWrongRefused(t *testing.T) {
	if !slices.Contains(isolators(), localDocker) {
		t.Skip("docker is not among DEVSANDBOX_IT_ISOLATORS")
	}
	requireEngine(t, localDocker)
	for _, tc := range []struct {
		name   string
		status int
	}{{"404", http.StatusNotFound}, {"200 without Api-Version", http.StatusOK}} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "dsb-wrongping-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			sock := filepath.Join(dir, "docker.sock")
			l, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(sock, 0o666); err != nil {
				t.Fatal(err)
			}
			log := &requestLog{}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				log.add(r)
				w.WriteHeader(tc.status)
			})}
			go func() { _ = srv.Serve(l) }()
			t.Cleanup(func() { srv.Close() })
			p := newProject(t)
			host := "unix://" + sock
			env := []string{"DOCKER_HOST=" + host}
			for _, args := range [][]string{
				{"--isolator=docker", "--egress=none", "--", "/bin/sh", "-c", "echo ran"},
				{"--isolator=docker", "--keep-container", "--egress=proxy", "--", "/bin/sh", "-c", "echo ran"},
				{"sandboxes", "list"},
				{"sandboxes", "rm", p.name()},
				{"image", "build", "--tag=devsandbox-podrefuse:t"},
			} {
				log.reset()
				r := run(t, p.dir, env, "", args...)
				want := "the engine at " + host + " answered its ping (HEAD /_ping) with HTTP " + strconv.Itoa(tc.status)
				if r.code != 125 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "point DOCKER_HOST (docker.host) at a Docker engine") {
					t.Errorf("%v at a listener whose ping answers %s: want it refused (125) with %q and the fix:\n%s", args, tc.name, want, r)
				}
				if got := log.all(); !slices.Equal(got, []string{"HEAD /_ping"}) {
					t.Errorf("%v at a listener whose ping answers %s: want only its ping sent, got %q", args, tc.name, got)
				}
			}
		})
	}
}

// TestSandboxesListEngineDown: an engine that does not answer is not refused as one
// that answers wrong: `sandboxes list` still lists the host side, with a warning,
// and exits 0.
func TestSandboxesListEngineDown(t *testing.T) {
	requireEngine(t, localDocker) // the suite's docker setup: devsandbox-docker installed
	p := newProject(t)
	sock := p.path("dead.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close() // the socket file stays; connecting to it is refused
	if err := os.Chown(sock, it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	r := run(t, p.dir, []string{"DOCKER_HOST=unix://" + sock}, "", "sandboxes", "list")
	if want := "the docker engine was not asked: isolator unavailable: the docker engine at unix://" + sock + " (DOCKER_HOST) does not answer"; r.code != 0 || !strings.Contains(r.stderr, want) {
		t.Errorf("sandboxes list with the engine down: want exit 0 and %q:\n%s", want, r)
	}
}

// refusesPodman reports whether out holds the refusal of podman's API at host (the
// address itself, or for podman's own socket, its listener) and the fix.
func refusesPodman(out, host string) bool {
	return strings.Contains(out, "the engine at "+host+" is Podman") &&
		strings.Contains(out, "Docker-compatible API, which the docker isolator does not support") &&
		strings.Contains(out, "--isolator krun") && strings.Contains(out, "--isolator bwrap")
}

// loadImage loads img from the docker engine into the isolated storage.
func (ip *isolatedPodman) loadImage(t *testing.T, img string) {
	t.Helper()
	tar := filepath.Join(ip.dir, "image.tar")
	if out, err := exec.Command("docker", "save", "-o", tar, img).CombinedOutput(); err != nil {
		t.Fatalf("docker save %s: %v: %s", img, err, out)
	}
	if err := os.Chown(tar, it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	ip.podman(t, "load", "-i", tar)
	os.Remove(tar)
}

// state is what the isolated storage holds: its containers (ID, name, state), volumes
// and images (every ID, intermediate ones too).
func (ip *isolatedPodman) state(t *testing.T) string {
	t.Helper()
	return strings.Join([]string{
		ip.podman(t, "ps", "-a", "--no-trunc", "--format", "{{.ID}} {{.Names}} {{.State}}"),
		ip.podman(t, "volume", "ls", "--format", "{{.Name}}"),
		ip.podman(t, "images", "-a", "-q", "--no-trunc"),
	}, "\n--\n")
}

// xdg is the XDG base directories of a first run of the test user's, under the
// isolated storage's directory (name: one set each), as environment entries.
func (ip *isolatedPodman) xdg(t *testing.T, name string) []string {
	t.Helper()
	var env []string
	for _, x := range []string{"XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"} {
		d := filepath.Join(ip.dir, name, strings.ToLower(x))
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, o := range []string{filepath.Dir(d), d} {
			if err := os.Chown(o, it.uid, it.gid); err != nil {
				t.Fatal(err)
			}
		}
		env = append(env, x+"="+d)
	}
	return env
}

// requestLog is what a relay passed on, one "METHOD PATH" a request.
type requestLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *requestLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, r.Method+" "+r.URL.Path)
}

func (l *requestLog) reset() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = nil
}

func (l *requestLog) all() []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// notPing is what was passed on other than a ping (HEAD or GET /_ping); nil for no
// log.
func (l *requestLog) notPing() []string {
	if l == nil {
		return nil
	}
	var out []string
	for _, s := range l.all() {
		if s != "HEAD /_ping" && s != "GET /_ping" {
			out = append(out, s)
		}
	}
	return out
}

// loggingRelay passes HTTP requests on to the Unix socket target, logging each, and
// returns where it listens: a socket path the test user may connect to (network
// "unix"), or HOST:PORT on 127.0.0.1 ("tcp"). It stops with the test.
func loggingRelay(t *testing.T, network, target string) (string, *requestLog) {
	t.Helper()
	var l net.Listener
	var err error
	addr := "127.0.0.1:0"
	if network == "unix" {
		dir, err := os.MkdirTemp("", "dsb-logrelay-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		addr = filepath.Join(dir, "docker.sock")
	}
	if l, err = net.Listen(network, addr); err != nil {
		t.Fatal(err)
	}
	if network == "unix" {
		if err := os.Chmod(addr, 0o666); err != nil {
			t.Fatal(err)
		}
	} else {
		addr = l.Addr().String()
	}
	log := &requestLog{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) { pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "d" },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", target)
		}},
		FlushInterval: -1,
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return addr, log
}
