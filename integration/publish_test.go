//go:build integration

package integration

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// --publish HOST_PORT:SANDBOX_PORT: a server in the sandbox is reachable from the host's
// 127.0.0.1:HOST_PORT in every egress mode and isolator.
func TestPublish(t *testing.T) {
	forEachIsolatorOf(t, withRootless(withTCP(isolators())), func(t *testing.T, iso string) {
		for _, mode := range []string{"proxy", "none", "allowlist", "open"} {
			t.Run(mode, func(t *testing.T) {
				p := newProject(t)
				p.write("proj/www/index.html", "FROM-SANDBOX\n")
				hostPort, sandboxPort := freePort(t), freePort(t) // in open mode the sandbox port is the host's too
				cmd := command(t.Context(), p.dir, baseEnv(), "--isolator="+iso, "--egress="+mode, "--allow", "192.0.2.1",
					"--publish", fmt.Sprintf("%d:%d", hostPort, sandboxPort), "--", "python3", "-c", wwwServer, fmt.Sprint(sandboxPort))
				stderr, stop := startReady(t, cmd)
				defer stop()
				getPublished(t, hostPort, stderr)
			})
		}
	})
}

// wwwServer is a Python program that serves the directory www of the working
// directory on 127.0.0.1, port argv[1], prints "ready" once it listens, and ends when
// its stdin does (see startReady).
const wwwServer = `
import http.server, socketserver, os, sys, threading
os.chdir("www")
srv = socketserver.TCPServer(("127.0.0.1", int(sys.argv[1])), http.server.SimpleHTTPRequestHandler)
threading.Thread(target=srv.serve_forever, daemon=True).start()
print("ready", flush=True)
sys.stdin.read()
`

// getPublished fetches index.html through the host's 127.0.0.1:hostPort, a port
// published from wwwServer serving "FROM-SANDBOX\n", and fails the test unless that
// comes back (stderr: devsandbox's, for the failure).
func getPublished(t *testing.T, hostPort int, stderr *strings.Builder) {
	t.Helper()
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", hostPort))
	if err != nil {
		t.Fatalf("the published port does not answer: %v\n%s", err, stderr.String())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "FROM-SANDBOX\n" {
		t.Fatalf("published port answered %q", body)
	}
}

// freePort returns a TCP port free on the host's loopback right now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestPublishedPortTakenLeavesNothing: a port to publish that is taken on the engine's
// host stops the run before its command (the session's companion cannot start), with
// the fix in the error, and the run leaves nothing in the engine: no container and no
// session endpoint volume. The companion's failure used to remove the endpoint volume
// while the sandbox's container was being made beside it; the engine then made a
// volume of that name itself (unlabelled, so no sweep or prune found it) or the
// removal gave up after 5 s on a volume still in use. Two runs, as the order of the
// two is a race.
func TestPublishedPortTakenLeavesNothing(t *testing.T) {
	forEachIsolatorOf(t, []string{localDocker}, func(t *testing.T, iso string) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		taken := ln.Addr().(*net.TCPAddr).Port
		p := newProject(t)
		for i := range 2 {
			r := run(t, p.dir, nil, "", "--isolator="+iso, "--egress=proxy", "--publish", fmt.Sprintf("%d:3000", taken), "--", "true")
			if r.code != 125 || !strings.Contains(r.stderr, "--publish HOST_PORT:SANDBOX_PORT") || !strings.Contains(r.stderr, "the command did not run") {
				t.Fatalf("run %d with the published port taken: %s", i, r)
			}
			vols := dockerAt(t, iso, "volume", "ls", "-q", "--filter", "name=devsandbox-"+p.name()+"-ep")
			ctrs := dockerAt(t, iso, "ps", "-aq", "--filter", "name=devsandbox-"+p.name())
			if vols != "" || ctrs != "" {
				t.Fatalf("run %d left volumes %q and containers %q in the engine", i, vols, ctrs)
			}
		}
	})
}
