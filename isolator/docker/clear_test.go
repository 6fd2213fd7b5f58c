package docker

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
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

// Over plain TCP to another machine, a run whose files sent by content hold a
// credential (a token in .git/config's remote URL, read from the file pinned as the
// engine would get it) is refused, naming the file and the key, before anything of
// the content reaches the engine: no volume made, no container created. Over
// loopback it runs.
func TestRunRefusesClearFiles(t *testing.T) {
	const token = "ghp_0123456789abcdefCLEARFILES"
	for _, tc := range []struct {
		name   string
		addr   Address
		refuse bool
	}{
		{"plain", Address{Host: "tcp://10.0.0.2:2375", Origin: "DOCKER_HOST"}, true},
		{"loopback", Address{Host: "tcp://127.0.0.1:2375", Origin: "DOCKER_HOST"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			b, p := testIsolator(t, f, false)
			b.dial = func() (Engine, Address, error) { return f, tc.addr, nil }
			var warned []string
			b.Warn = func(m string) { warned = append(warned, m) }
			f.listed = []*volume.Volume{{Name: "devsandbox-" + p.Project.Name + "-home"}}
			p.Secrets, p.HostEnv = nil, nil
			cfg := filepath.Join(p.Project.Dir, ".git", "config")
			if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cfg, []byte("[remote \"origin\"]\n\turl = https://u:"+token+"@git.example.test/r.git\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: cfg, Dest: cfg, ReadOnly: true, Anchor: true, Why: isolator.WhyGitConfig})
			_, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard})
			if !tc.refuse {
				if err != nil {
					t.Fatalf("Run over loopback: %v", err)
				}
				if n := clearWarnings(warned); n != 1 {
					t.Errorf("Run over loopback warned %d times that it goes ahead over plain TCP, want once: %q", n, warned)
				}
				return
			}
			// The refusal alone: not first the warning of a run that goes ahead.
			if n := clearWarnings(warned); n != 0 {
				t.Errorf("the refused run warned %d times that it goes ahead over plain TCP: %q", n, warned)
			}
			if want := "this run would send it the content of " + cfg + " (remote.origin.url), taken for a credential, in clear"; !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), want) {
				t.Fatalf("Run with a token in .git/config over plain TCP: %v, want the refusal (ErrProtection) with %q", err, want)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("the refusal names the token: %v", err)
			}
			for _, c := range f.calls {
				if strings.HasPrefix(c, "VolumeCreate") || strings.HasPrefix(c, "ContainerCreate") {
					t.Errorf("a request that carries content reached the engine before the refusal: %q", f.calls)
				}
			}
		})
	}
}

// clearWarnings counts the warnings in warned that a run goes ahead over plain TCP.
func clearWarnings(warned []string) int {
	n := 0
	for _, w := range warned {
		if strings.Contains(w, "is reached over plain TCP") {
			n++
		}
	}
	return n
}
