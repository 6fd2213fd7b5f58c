//go:build integration

package integration

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// pemBody is a full line of a PEM block's base64 body.
var pemBody = regexp.MustCompile(`(?m)^[A-Za-z0-9+/]{64}$`)

// TestDryRunMITMNamesTheBundleSources: with proxy.mitm on, --dry-run shows where the
// sandbox's CA bundle comes from (the host's bundle and the project CA's certificate),
// not the 145 certificates themselves, which buried the command under 3,600 lines; it
// prints no line of the CA's key. The docker script, run, builds the bundle a run puts
// in the sandbox, byte for byte.
func TestDryRunMITMNamesTheBundleSources(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		cfg := p.writeConfig(iso, "mitm.toml", "[proxy]\nmitm = true\n")
		flags := []string{"--config=" + cfg, "--egress=proxy"}
		// A run makes the project's CA, so the dry run has a certificate to show.
		bundle := p.mustSandbox(iso, flags, "cat /run/devsandbox/ca-bundle.pem")
		caFile := filepath.Join(it.home, ".local/state/devsandbox", p.name(), "proxy-ca.pem")
		key, err := os.ReadFile(caFile)
		if err != nil || !strings.Contains(bundle, "-----BEGIN CERTIFICATE-----") {
			t.Fatalf("the run made no CA (%v) or its bundle holds none:\n%s", err, bundle)
		}
		args := append([]string{"--isolator=" + iso, "--dry-run"}, flags...)
		r := run(t, p.dir, nil, "", append(args, "--", "cat", "/run/devsandbox/ca-bundle.pem")...)
		if r.code != 0 {
			t.Fatalf("dry run:\n%s", r)
		}
		if n := strings.Count(r.stdout, "\n"); n > 400 || pemBody.MatchString(r.stdout) {
			t.Errorf("the dry run is %d lines, with a PEM block inline: %v", n, pemBody.FindString(r.stdout))
		}
		_, k, _ := strings.Cut(string(key), "PRIVATE KEY-----\n")
		for _, l := range strings.Split(k, "\n") {
			if len(l) > 16 && strings.Contains(r.stdout+r.stderr, l) {
				t.Fatalf("the dry run prints a line of the CA's key: %q", l)
			}
		}
		if strings.Contains(r.stdout+r.stderr, "PRIVATE KEY") {
			t.Fatal("the dry run prints a private key")
		}
		if iso != localDocker {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		sh := command(ctx, p.dir, baseEnv(), "-c", r.stdout)
		sh.Path, sh.Args[0] = "/bin/sh", "sh"
		out, err := sh.CombinedOutput()
		if err != nil || string(out) != bundle {
			t.Errorf("running the dry-run script: %v, %d bytes, the run's bundle %d:\n%.2000s", err, len(out), len(bundle), out)
		}
		if r := run(t, p.dir, []string{"DOCKER_HOST=" + engineOf(localDocker)}, "", "sandboxes", "rm", p.name()); r.code != 0 {
			t.Errorf("sandboxes rm after the dry-run script:\n%s", r)
		}
	})
}
