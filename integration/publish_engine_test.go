//go:build integration

package integration

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A published port is reachable through the engine's publishing on its host's
// 127.0.0.1 only: another container on the engine's default bridge that connects to the
// companion's address and port directly gets nothing from the sandbox, one-shot and
// kept alike.
func TestDockerPublishOnlyThroughEngine(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		for _, keep := range []bool{false, true} {
			t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
				p := newProject(t)
				p.write("proj/www/index.html", "FROM-SANDBOX\n")
				hostPort, sandboxPort := freePort(t), freePort(t)
				server := `
import http.server, socketserver, os, sys, threading
os.chdir("www")
srv = socketserver.TCPServer(("127.0.0.1", int(sys.argv[1])), http.server.SimpleHTTPRequestHandler)
threading.Thread(target=srv.serve_forever, daemon=True).start()
print("ready", flush=True)
sys.stdin.read()
`
				args := []string{"--isolator=" + iso, "--egress=proxy", "--publish", fmt.Sprintf("%d:%d", hostPort, sandboxPort)}
				if keep {
					args = append(args, "--keep-container")
				}
				cmd := command(t.Context(), p.dir, baseEnv(), append(args, "--", "python3", "-c", server, fmt.Sprint(sandboxPort))...)
				stdin, _ := cmd.StdinPipe()
				stdout, _ := cmd.StdoutPipe()
				var stderr strings.Builder
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				defer func() { stdin.Close(); _ = cmd.Wait() }()
				if l := newLineReader(t, stdout).next(); l != "ready" {
					t.Fatalf("the server in the sandbox did not start (%q):\n%s", l, stderr.String())
				}
				// Through the engine's publishing: served.
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
				// Directly, from a neighbour on the bridge, at every companion's address
				// (a kept container has its own and the session's): refused.
				comps := roleContainers(t, iso, p, false, "companion")
				if len(comps) == 0 {
					t.Fatal("no companion")
				}
				for _, c := range comps {
					addr := dockerAt(t, iso, "inspect", "--format", "{{.NetworkSettings.IPAddress}}", c)
					if addr == "" {
						t.Fatalf("the companion %s has no address on the default bridge", c)
					}
					out, _ := dockerCmd(iso, "run", "--rm", "devsandbox-test/busybox:1", "sh", "-c",
						fmt.Sprintf("timeout 5 wget -q -O- http://%s:%d/index.html && echo REACHED || echo REFUSED", addr, hostPort)).CombinedOutput()
					if got := string(out); strings.Contains(got, "FROM-SANDBOX") || !strings.Contains(got, "REFUSED") {
						t.Fatalf("another container on the engine reached the published port at %s:%d directly:\n%s", addr, hostPort, got)
					}
				}
			})
		}
	})
}
