package docker

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/volume"

	"github.com/devsandbox/devsandbox/isolator"
)

// Over plain TCP to another machine a run with a secret is refused before any
// request reaches the engine; without one it runs, warned of.
func TestRunRefusesSecretsInClear(t *testing.T) {
	plain := Address{Host: "tcp://10.0.0.2:2375", Origin: "DOCKER_HOST"}
	f := newFake(t)
	b, p := testIsolator(t, f, false)
	b.dial = func() (Engine, Address, error) { return f, plain, nil }
	var warned []string
	b.Warn = func(s string) { warned = append(warned, s) }
	_, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard})
	if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "1 secret(s) in clear") {
		t.Fatalf("Run with a secret over plain TCP: %v, want the refusal (ErrProtection)", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the refusal names the secret's value: %v", err)
	}
	if len(f.calls) != 0 {
		t.Errorf("requests reached the engine before the refusal: %q", f.calls)
	}

	f = newFake(t)
	b, p = testIsolator(t, f, false)
	b.dial = func() (Engine, Address, error) { return f, plain, nil }
	warned = nil
	b.Warn = func(s string) { warned = append(warned, s) }
	f.listed = []*volume.Volume{{Name: "devsandbox-" + p.Project.Name + "-home"}}
	p.Secrets, p.HostEnv = nil, nil
	code, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard})
	if err != nil || code != 3 {
		t.Fatalf("Run without a secret over plain TCP: %d, %v; want the command's 3", code, err)
	}
	if len(warned) == 0 || !strings.HasPrefix(warned[0], "the docker engine at tcp://10.0.0.2:2375 (DOCKER_HOST) is reached over plain TCP over the network") {
		t.Errorf("warnings: %q", warned)
	}
}
