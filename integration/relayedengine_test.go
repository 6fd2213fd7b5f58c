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
// of the stand-in engine (dockerd 26 in this machine's network namespace: a relayed
// engine is also judged remote for binds, and an older one, this machine's dockerd
// 20.10, refuses the project's writable .git), so the run works as on the engine
// itself; what tells the two apart is the lister's container, read from the engine's
// create events. Before, a Unix socket counted as this machine's engine whoever
// served it: for ssh -L the companion refused this machine's addresses and left the
// remote engine host's own services and its API open to a name entry, or to
// proxy.default = "allow".
func TestRelayedEngineListsHostAddresses(t *testing.T) {
	requireEngine(t, remoteDocker)
	relay := "unix://" + relayTo(t, strings.TrimPrefix(remoteEngine, "unix://"))
	p := newProject(t)
	if n := listers(t, p, remoteDocker, []string{"DOCKER_HOST=" + relay}); n == 0 {
		t.Errorf("DOCKER_HOST=%s (a relay to the stand-in engine): the engine host's addresses were not listed in a container", relay)
	}
}

// TestEngineHostNetworkPerVariant: which engines are taken for ones in this machine's
// network namespace, whose addresses are then the engine host's, and which have them
// listed in a container (the lister) besides: this machine's engine and the stand-in
// (dockerd in this machine's network namespace, the stand-in in a mount namespace of
// its own) list nothing; the stand-in over TCP and the rootless engine (dockerd in
// rootlesskit's network namespace, behind slirp4netns) run the lister.
func TestEngineHostNetworkPerVariant(t *testing.T) {
	want := map[string]bool{localDocker: false, remoteDocker: false, tcpDocker: true, rootlessDocker: true}
	forEachIsolatorOf(t, withTCP(withRootless(dockerVariants())), func(t *testing.T, iso string) {
		p := newProject(t)
		if got := listers(t, p, iso, nil) > 0; got != want[iso] {
			t.Errorf("the engine host's addresses listed in a container: %v, want %v", got, want[iso])
		}
	})
}

// listers runs `--egress=proxy true` on docker variant iso (env may name another
// DOCKER_HOST for it) and returns how many host-address listers the engine made for
// the project, read from its create events.
func listers(t *testing.T, p *project, iso string, env []string) int {
	t.Helper()
	now := time.Now()
	since := fmt.Sprintf("%d.%09d", now.Unix(), now.Nanosecond())
	args, env := isolatorArgs([]string{"--isolator=" + iso, "--egress=proxy", "--", "true"}, env)
	if r := run(t, p.dir, env, "", args...); r.code != 0 {
		t.Fatalf("%v %v:\n%s", env, args, r)
	}
	until := strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10)
	id := strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")
	out := dockerAt(t, iso, "events", "--since", since, "--until", until, "--filter", "type=container", "--filter", "event=create",
		"--filter", "label=dev.devsandbox.project="+id, "--format", "{{.Actor.Attributes.name}}")
	names := strings.Fields(out)
	if len(names) < 2 {
		t.Fatalf("saw %d containers of the project made, want the companion and the sandbox at least (the count proves nothing):\n%s", len(names), out)
	}
	n := 0
	for _, name := range names {
		if strings.Contains(name, "-ha-") {
			n++
		}
	}
	t.Logf("%v: containers made: %s", env, strings.Join(names, " "))
	return n
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
