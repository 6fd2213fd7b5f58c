//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A process that got into the kept container's companion (the test's docker exec as
// the companion's user stands in for a compromised dependency of devsandbox-proxy,
// which holds the session's credentials and MITM CA key) can leave nothing there that
// the next session runs or that reads it: the companion's root file system is
// read-only, so no file in it can be planted or replaced (on a rootless engine the
// companion is the container's root, the owner of the image's files, which it could
// otherwise make writable: devsandbox-proxy itself, which every session execs), and
// nothing but the endpoint volume (shared with the sandbox, which writes there anyway)
// is writable: no message queue can be made in its IPC namespace's /dev/mqueue either.
// A process the engine exec'd there (this test's docker exec) outlives the session;
// the next session's proxy is not dumpable, so that process (same user) can neither
// read its environment nor open its memory. (What a session's proxy leaves there
// ends with its session: TestCompanionLeftoversEndWithTheirSession.)
func TestCompanionKeepsNothingForNextSession(t *testing.T) {
	forEachIsolatorOf(t, withRootless(dockerVariants()), func(t *testing.T, iso string) {
		p := newProject(t)
		engine := []string{"DOCKER_HOST=" + engineOf(iso)}
		t.Cleanup(func() { run(t, p.dir, engine, "", "sandboxes", "rm", p.name()) })
		args := []string{"--isolator=" + iso, "--image=devsandbox-test/debian:3", "--egress=proxy", "--keep-container", "--"}
		if r := run(t, p.dir, nil, "", append(args, "true")...); r.code != 0 {
			t.Fatalf("the first session:\n%s", r)
		}
		px := "devsandbox-" + p.name() + "-px"
		user := strings.TrimSpace(dockerAt(t, iso, "inspect", "--format", "{{.Config.User}}", px))
		attack := `PATH=/usr/bin:/bin
for d in / /etc /run /run/devsandbox /var/tmp /run/lock /tmp /dev/shm /dev/mqueue /home /root /ep; do
  (echo planted > "$d/dsb-planted") 2>/dev/null && echo "wrote $d"
done
# A message queue is made by the open alone (writing to it as a file then fails).
[ -e /dev/mqueue/dsb-planted ] && echo "made a message queue in /dev/mqueue"
chmod u+w /run/devsandbox/devsandbox-proxy 2>/dev/null
(printf '#!/bin/sh\nexit 0\n' > /run/devsandbox/devsandbox-proxy) 2>/dev/null && echo "replaced devsandbox-proxy"
true`
		out, err := dockerCmd(iso, "exec", "-u", user, px, "/bin/sh", "-c", attack).CombinedOutput()
		if err != nil {
			t.Fatalf("docker exec in the companion: %v: %s", err, out)
		}
		var wrote []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" && l != "wrote /ep" {
				wrote = append(wrote, l)
			}
		}
		if len(wrote) > 0 {
			t.Errorf("as the companion's user (%s), a process in the kept companion changed what outlives its session: %s", user, strings.Join(wrote, "; "))
		}
		if out, err := dockerCmd(iso, "exec", "-d", "-u", user, px, "/bin/sleep", "600").CombinedOutput(); err != nil {
			t.Fatalf("leaving a process in the companion: %v: %s", err, out)
		}
		// The next session waits for the test's probe (the file "probed" in the
		// project), its proxy running in the companion meanwhile.
		done := make(chan result, 1)
		go func() {
			done <- run(t, p.dir, nil, "", append(args, "/bin/sh", "-c", "i=0; while [ ! -e probed ] && [ $i -lt 400 ]; do sleep 0.1; i=$((i+1)); done; echo next")...)
		}()
		probe := `PATH=/usr/bin:/bin
for d in /proc/[0-9]*; do
  c=$(tr '\0' ' ' < $d/cmdline 2>/dev/null)
  case "$c" in "/run/devsandbox/devsandbox-proxy companion ") ;; *) continue ;; esac
  echo "proxy ${d#/proc/}"
  (head -c 64 < $d/environ >/dev/null) 2>/dev/null && echo "read environ"
  (head -c 0 < $d/mem) 2>/dev/null && echo "opened mem"
done
for d in /proc/[0-9]*; do [ "$(tr '\0' ' ' < $d/cmdline 2>/dev/null)" = "/bin/sleep 600 " ] && echo "sleeper alive"; done
true`
		var seen string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			o, err := dockerCmd(iso, "exec", "-u", user, px, "/bin/sh", "-c", probe).CombinedOutput()
			if err == nil && strings.Contains(string(o), "proxy ") {
				seen = string(o)
				break
			}
		}
		if err := os.WriteFile(filepath.Join(p.dir, "probed"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if r := <-done; r.code != 0 || r.stdout != "next\n" {
			t.Errorf("the next session, after the attack:\n%s", r)
		}
		if seen == "" {
			t.Fatalf("the next session's proxy was never seen in the companion")
		}
		t.Logf("the probe from the companion during the next session:\n%s", seen)
		if strings.Contains(seen, "read environ") || strings.Contains(seen, "opened mem") {
			t.Errorf("a process of the companion's user read the next session's proxy (its credentials are in its memory):\n%s", seen)
		}
	})
}
