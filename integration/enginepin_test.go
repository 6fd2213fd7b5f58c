//go:build integration

package integration

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dockercontainer "github.com/docker/docker/api/types/container"

	"github.com/devsandbox/devsandbox/isolator/docker"
)

// TestEngineSocketSwappedAfterCheck: the engine's socket, at a path in a directory
// its user can write (a rootless engine's $XDG_RUNTIME_DIR/docker.sock, a relayed
// socket), is checked (who listens: dockerd in this network namespace) and then
// swapped for another listener's. Every request of the client goes to the socket that
// was checked, not to what the path names by then. On base the check looked at one
// connection and the client dialled the path again: its requests went to the
// impostor.
func TestEngineSocketSwappedAfterCheck(t *testing.T) {
	requireDocker(t)
	dir, err := os.MkdirTemp("", "dsb-enginepin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "docker.sock")
	// The engine, at a path of the test's directory.
	if err := os.Symlink("/var/run/docker.sock", sock); err != nil {
		t.Fatal(err)
	}
	a, err := docker.ResolveAddress("unix://"+sock, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, a, err := docker.Dial(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if n := a.HostNetwork(); !n.Here {
		t.Fatalf("this machine's dockerd at %s: not taken for one in this network namespace: %s", sock, n.Why)
	}
	// The swap: another listener's socket renamed over the checked path.
	var asked atomic.Int32
	fake := filepath.Join(dir, "impostor.sock")
	l, err := net.Listen("unix", fake)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Api-Version", "1.99")
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("OK"))
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	if err := os.Rename(fake, sock); err != nil {
		t.Fatal(err)
	}
	p, err := e.Ping(ctx)
	if err != nil {
		t.Fatalf("ping after the swap: %v", err)
	}
	if n := asked.Load(); n != 0 || p.APIVersion == "1.99" {
		t.Fatalf("after the socket at %s was swapped, %d requests went to the impostor (ping's API version %q): the client dialled the path again, not the socket that was checked", sock, n, p.APIVersion)
	}
	if _, err := e.ContainerList(ctx, dockercontainer.ListOptions{All: true}); err != nil {
		t.Fatalf("container list after the swap: %v", err)
	}
	// The connections attach and exec hijack are the client's dialler's.
	d, ok := e.(interface {
		Dialer() func(context.Context) (net.Conn, error)
	})
	if !ok {
		t.Fatalf("the engine client %T has no Dialer", e)
	}
	c, err := d.Dialer()(ctx)
	if err != nil {
		t.Fatalf("the client's dialler after the swap: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET /_ping HTTP/1.1\r\nHost: docker\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("a ping on the client's dialled stream: %v", err)
	}
	resp.Body.Close()
	if n := asked.Load(); n != 0 || resp.Header.Get("Api-Version") == "1.99" {
		t.Fatalf("after the swap, %d requests went to the impostor (the dialled stream's API version %q)", n, resp.Header.Get("Api-Version"))
	}
	if n := a.HostNetwork(); !n.Here {
		t.Errorf("after the swap, the check's result changed: %s", n.Why)
	}
}

// TestRelayedEngineNotLocalForBinds: a Unix socket whose listener is a relay (ssh -L
// to a remote engine, socat), not dockerd, is not taken for an engine that binds this
// machine's files: the run takes the remote path, the sandbox home in a volume of the
// engine's (devsandbox-NAME-home), as for a tcp:// engine. The relay here is the
// test's process in front of the stand-in engine. Before, any Unix socket counted as
// local: the home was bound from this host's path, which a remote engine resolves on
// its own host.
func TestRelayedEngineNotLocalForBinds(t *testing.T) {
	requireEngine(t, remoteDocker)
	relay := "unix://" + relayTo(t, strings.TrimPrefix(remoteEngine, "unix://"))
	p := newProject(t)
	home := "devsandbox-" + p.name() + "-home"
	t.Cleanup(func() { _ = dockerCmd(remoteDocker, "volume", "rm", "-f", home).Run() })
	args, env := isolatorArgs([]string{"--isolator=" + remoteDocker, "--egress=none", "--", "true"}, []string{"DOCKER_HOST=" + relay})
	if r := run(t, p.dir, env, "", args...); r.code != 0 {
		t.Fatalf("%v %v:\n%s", env, args, r)
	}
	if out := dockerAt(t, remoteDocker, "volume", "ls", "-q", "--filter", "name=^"+home+"$"); out != home {
		t.Errorf("DOCKER_HOST=%s (a relay to the stand-in engine): the sandbox home was not a volume of the engine (volumes named %s: %q): the relayed socket was taken for an engine binding this machine's files", relay, home, out)
	}
}
