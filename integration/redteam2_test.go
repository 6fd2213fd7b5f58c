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
