//go:build integration

package integration

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRelayedEngineListsHostAddresses: an engine reached through a Unix socket that a
// relay serves, not dockerd (ssh -L to a remote engine, socat, Docker Desktop's
// backend), is not taken for one in this machine's network: the engine host's
// addresses are listed in a container of its host network, for the companion to
// refuse, as for a tcp:// engine. The relay here is the test's own process in front
// of this machine's engine, so the run works as on the engine itself; what tells the
// two apart is the lister's container, read from the engine's create events. Before,
// a Unix socket counted as this machine's engine whoever served it: for ssh -L the
// companion refused this machine's addresses and left the remote engine host's own
// services and its API open to a name entry, or to proxy.default = "allow". On the
// engine's own socket no lister runs: dockerd listens there, in this machine's
// network namespace.
func TestRelayedEngineListsHostAddresses(t *testing.T) {
	requireDocker(t)
	relay := relayTo(t, "/var/run/docker.sock")
	p := newProject(t)
	t.Cleanup(func() { run(t, p.dir, nil, "", "sandboxes", "rm", p.name()) })
	for _, tc := range []struct {
		host   string
		lister bool
	}{
		{"unix://" + relay, true},
		{"unix:///var/run/docker.sock", false},
	} {
		now := time.Now()
		since := fmt.Sprintf("%d.%09d", now.Unix(), now.Nanosecond())
		if r := run(t, p.dir, []string{"DOCKER_HOST=" + tc.host}, "", "--isolator=docker", "--egress=proxy", "--", "true"); r.code != 0 {
			t.Fatalf("DOCKER_HOST=%s:\n%s", tc.host, r)
		}
		until := strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10)
		id := strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")
		out := dockerAt(t, localDocker, "events", "--since", since, "--until", until, "--filter", "type=container", "--filter", "event=create",
			"--filter", "label=dev.devsandbox.project="+id, "--format", "{{.Actor.Attributes.name}}")
		var listers, all int
		for _, name := range strings.Fields(out) {
			all++
			if strings.Contains(name, "-ha-") {
				listers++
			}
		}
		if all < 2 {
			t.Fatalf("DOCKER_HOST=%s: saw %d containers of the project made, want the companion and the sandbox at least (the count below proves nothing):\n%s", tc.host, all, out)
		}
		if got := listers > 0; got != tc.lister {
			t.Errorf("DOCKER_HOST=%s: the engine host's addresses listed in a container: %v, want %v (containers made: %s)", tc.host, got, tc.lister, strings.Join(strings.Fields(out), " "))
		}
	}
}

// relayTo serves a Unix socket that the test user may connect to, relaying each
// connection to the socket at target, and returns its path. The relay is the test's
// process: the socket's listener is not dockerd.
func relayTo(t *testing.T, target string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dsb-relay-")
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
	t.Cleanup(func() { l.Close() })
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("unix", target)
				if err != nil {
					return
				}
				defer up.Close()
				done := make(chan struct{})
				go func() {
					_, _ = io.Copy(up, c)
					_ = up.(*net.UnixConn).CloseWrite()
					close(done)
				}()
				_, _ = io.Copy(c, up)
				_ = c.(*net.UnixConn).CloseWrite()
				<-done
			}()
		}
	}()
	return sock
}
