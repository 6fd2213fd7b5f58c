//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestProxyStartsOnDemand: on the host (bwrap, krun) devsandbox-proxy starts on the
// sandbox's first connection to it, not with the sandbox. A run that never connects
// starts no proxy process and logs nothing; connections made as soon as the command
// starts wait for the proxy, are decided by the policy, and are in the audit log when
// the run ends. (docker runs its proxy in the engine, beside the sandbox.)
func TestProxyStartsOnDemand(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	onHost := slices.DeleteFunc(isolators(), isDocker)
	forEachIsolatorOf(t, onHost, func(t *testing.T, iso string) {
		p := newProject(t)
		flags := []string{"--isolator=" + iso, "--egress=proxy", "--allow", o.addr + ":8080"}

		if running, out := proxyWhileReady(t, p, flags, `echo ready`); running {
			t.Errorf("devsandbox-proxy runs although the sandbox made no connection (output %q)", out)
		}
		if r := run(t, p.dir, nil, "", "logs", "proxy", "--json"); r.code != 0 || r.stdout != "" {
			t.Fatalf("audit log after a run without connections:\n%s", r)
		}

		script := fmt.Sprintf(`for port in 8080 8081; do
			curl -s -o /dev/null -w '%%{http_code}\n' -m 10 -x "$HTTPS_PROXY" http://%s:$port/index.html
		done
		echo ready`, o.addr)
		running, out := proxyWhileReady(t, p, flags, script)
		if out != "200\n403\n" {
			t.Errorf("statuses of the first connections: %q, want 200 then 403", out)
		}
		if !running {
			t.Error("no devsandbox-proxy among devsandbox's descendants after the sandbox's connections")
		}
		r := run(t, p.dir, nil, "", "logs", "proxy", "--json")
		var got []string
		for line := range strings.Lines(r.stdout) {
			var rec struct {
				Decision string
				Port     int
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("%v in %q", err, line)
			}
			got = append(got, fmt.Sprintf("%s %d", rec.Decision, rec.Port))
		}
		if want := []string{"allow 8080", "deny 8081"}; r.code != 0 || !slices.Equal(got, want) {
			t.Errorf("audit log after the run: %q (%s), want %q", got, r, want)
		}
	})
}

// proxyWhileReady runs script in the sandbox, then holds the sandbox open after its
// "ready" line while it reports whether a devsandbox-proxy is among devsandbox's
// descendants; it returns that and the script's output before "ready".
func proxyWhileReady(t *testing.T, p *project, flags []string, script string) (bool, string) {
	t.Helper()
	args := append(slices.Clone(flags), "--", "/bin/sh", "-c", script+"\nread _")
	cmd := command(t.Context(), p.dir, baseEnv(), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	lr, release := started(t, cmd)
	var out strings.Builder
	for line := lr.next(); line != "ready"; line = lr.next() {
		if line == "" {
			cmd.Wait()
			t.Fatalf("the sandbox ended before it was ready; output %q, stderr:\n%s", out.String(), stderr.String())
		}
		out.WriteString(line + "\n")
	}
	running := slices.ContainsFunc(descendants(cmd.Process.Pid), func(pid int) bool { return program(pid) == "devsandbox-proxy" })
	release()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("devsandbox: %v; stderr:\n%s", err, stderr.String())
	}
	return running, out.String()
}
