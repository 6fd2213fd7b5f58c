//go:build integration

package integration

import (
	"fmt"
	"strings"
	"testing"
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
				args := []string{"--isolator=" + iso, "--egress=proxy", "--publish", fmt.Sprintf("%d:%d", hostPort, sandboxPort)}
				if keep {
					args = append(args, "--keep-container")
				}
				cmd := command(t.Context(), p.dir, baseEnv(), append(args, "--", "python3", "-c", wwwServer, fmt.Sprint(sandboxPort))...)
				stderr, stop := startReady(t, cmd)
				defer stop()
				// Through the engine's publishing: served.
				getPublished(t, hostPort, stderr)
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
