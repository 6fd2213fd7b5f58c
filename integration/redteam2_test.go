//go:build integration

package integration

import (
	"strings"
	"testing"
)

// A kept container's /run/secrets is the container's tmpfs: a session's secret files
// must not outlive it. A later run of the project given no secret (another command,
// another user's environment: an install hook run after a deploy) must not read the
// files an earlier run was given.
func TestKeptSecretsDoNotOutliveTheSession(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		p := newProject(t)
		keep := []string{"--keep-container", "--egress=none"}
		settle(p, iso, keep)
		const secret = "KEPT-SECRET-5d1f"
		p.write("token.txt", secret+"\n")
		if r := run(t, p.dir, nil, "", append([]string{"--isolator=" + iso}, append(keep, "--secret-file", "token="+p.path("token.txt"), "--", "/bin/sh", "-c", `cat /run/secrets/token`)...)...); r.code != 0 || !strings.Contains(r.stdout, secret) {
			t.Fatalf("the run given the secret file:\n%s", r)
		}
		r := p.sandbox(iso, keep, `ls -A /run/secrets; cat /run/secrets/* 2>/dev/null; true`)
		if r.code != 0 {
			t.Fatalf("a later run:\n%s", r)
		}
		if strings.Contains(r.stdout, secret) || strings.Contains(r.stdout, "token") {
			t.Fatalf("a later run given no secret read an earlier session's secret file in the kept container:\n%s", r)
		}
	})
}

// Azure's WireServer (168.63.129.16, ports 80 and 32526: the guest agent's goal
// state, extension settings, and the VM's certificates to whoever sends a transport
// key) is a cloud metadata service on an address of the public range: the proxy must
// refuse it as it refuses 169.254.169.254, unless an allow entry names it. The Azure
// guest agent's firewall lets only root reach it from the VM; a docker sandbox's
// companion is forwarded traffic, which that rule does not see.
func TestProxyRefusesAzureWireServer(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("proj/ask.py", connectScript)
		out := p.mustSandbox(iso, []string{"--egress=proxy"}, `python3 ask.py 'wire=CONNECT 168.63.129.16:80 HTTP/1.1' 'hostga=CONNECT 168.63.129.16:32526 HTTP/1.1'
			echo "get $(curl -s -m 10 -x "$HTTP_PROXY" 'http://168.63.129.16/machine/?comp=goalstate' | head -c 300 | tr '\n' ' ')"`)
		got := parseLabels(out)
		for _, k := range []string{"wire", "hostga"} {
			if got[k] != "403" {
				t.Errorf("%s to Azure's WireServer through the proxy: %q, want 403 (refused before any dial)\n%s", k, got[k], out)
			}
		}
		if !strings.Contains(got["get"], "devsandbox proxy") || !strings.Contains(got["get"], "metadata") {
			t.Errorf("a GET of Azure's WireServer through the proxy: %q, want the proxy's refusal naming a metadata address", got["get"])
		}
	})
}
