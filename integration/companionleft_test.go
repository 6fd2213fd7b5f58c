//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// What a session's proxy leaves running in the kept container's companion ends with
// that session, before the next session's proxy gets its secrets: the realistic
// attacker here is code running in a session's devsandbox-proxy (a compromised
// dependency, or a bug reached through the sandbox's requests or an upstream's
// answers), which holds the session's credentials and has the companion's unfiltered
// network. It can start processes (children it leaves behind when it exits), and can
// keep its own process from ending with its session (stopped, here). The test's
// docker exec as the companion's user stands in for both: a shell that leaves a
// background process and exits, and a SIGSTOP of the session's proxy. A process the
// engine itself execs (docker exec, the engine's user: root-equivalent) is not
// modelled: nothing inside the companion can start one.
func TestCompanionLeftoversEndWithTheirSession(t *testing.T) {
	forEachIsolatorOf(t, withRootless(dockerVariants()), func(t *testing.T, iso string) {
		p := newProject(t)
		engine := []string{"DOCKER_HOST=" + engineOf(iso)}
		t.Cleanup(func() { run(t, p.dir, engine, "", "sandboxes", "rm", p.name()) })
		args := []string{"--isolator=" + iso, "--egress=proxy", "--keep-container", "--"}
		if r := run(t, p.dir, nil, "", append(args, "true")...); r.code != 0 {
			t.Fatalf("the first session:\n%s", r)
		}
		px := "devsandbox-" + p.name() + "-px"
		user := strings.TrimSpace(dockerAt(t, iso, "inspect", "--format", "{{.Config.User}}", px))
		inCompanion := func(script string) string {
			t.Helper()
			out, err := dockerCmd(iso, "exec", "-u", user, px, "/bin/sh", "-c", script).CombinedOutput()
			if err != nil {
				t.Fatalf("docker exec in the companion: %v: %s", err, out)
			}
			return string(out)
		}
		// Lists the companion's processes but pid 1 and the lister's own.
		const list = `for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = 1 ] && continue; c=$(tr '\0' ' ' < $d/cmdline 2>/dev/null)
  case "$c" in ""|"tr "*|"/bin/sh -c for d in"*) ;; *) echo "$p $c" ;; esac; done; true`

		// A process left by an exec that ended, as a compromised proxy leaves one.
		inCompanion(`sleep 600 </dev/null >/dev/null 2>&1 & echo left`)
		// The next session: its proxy is stopped mid-session (as code in it could
		// stop itself) and so outlives the end of its stdin.
		probed := filepath.Join(p.dir, "probed")
		done := make(chan result, 1)
		go func() {
			done <- run(t, p.dir, nil, "", append(args, "/bin/sh", "-c", "touch started; i=0; while [ ! -e probed ] && [ $i -lt 400 ]; do sleep 0.1; i=$((i+1)); done; echo next")...)
		}()
		// The session's command runs once its proxy is ready.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(p.dir, "started")); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the next session never started")
			}
		}
		during := inCompanion(list)
		stopped := inCompanion(`for d in /proc/[0-9]*; do [ "$(tr '\0' ' ' < $d/cmdline 2>/dev/null)" = "/run/devsandbox/devsandbox-proxy companion " ] && kill -STOP ${d#/proc/} && echo stopped; done; true`)
		if err := os.WriteFile(probed, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if r := <-done; r.stdout != "next\n" {
			t.Errorf("the next session:\n%s", r)
		}
		t.Logf("during the next session, besides pid 1:\n%s(%s)", during, strings.TrimSpace(stopped))
		if strings.Contains(during, "sleep 600") {
			t.Errorf("a process an earlier session left in the kept companion ran during the next session:\n%s", during)
		}
		if !strings.Contains(stopped, "stopped") {
			t.Fatalf("the next session's proxy was never seen in the companion:\n%s", during)
		}
		var after string
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if after = strings.TrimSpace(inCompanion(list)); after == "" {
				return
			}
		}
		t.Errorf("processes of ended sessions still run in the kept companion: %q", after)
	})
}
