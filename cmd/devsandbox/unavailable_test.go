package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
)

// An isolator that cannot run stops the run (sandbox.mode enforce) with a message a
// user can act on even when the backend's reason names no fix (podman's own error,
// krun's runtime missing): doctor for the requirements and their fixes, and where the
// isolator was chosen, so that another can be. The cause stays in the chain.
func TestUnavailableSaysWhatNext(t *testing.T) {
	home := t.TempDir()
	user := filepath.Join(home, ".config", "devsandbox", "config.toml")
	if err := os.MkdirAll(filepath.Dir(user), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, []byte("isolator = \"docker\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cause := fmt.Errorf("%w: podman's API service could not be started on /run/user/1000/podman/s.sock: podman system service exited: Error: default OCI runtime \"krun\" not found", isolator.ErrUnavailable)
	krun := "krun"
	for _, tt := range []struct {
		name    string
		environ []string
		flags   config.Flags
		want    string
	}{
		{"flag", []string{"HOME=" + home}, config.Flags{Isolator: &krun},
			"; `devsandbox doctor` (with the same flags) shows what the krun isolator needs here and how to fix it, or choose another (isolator = krun, from --isolator)"},
		{"env", []string{"HOME=" + home, "DEVSANDBOX_ISOLATOR=krun"}, config.Flags{},
			"; `devsandbox doctor` (with the same flags) shows what the krun isolator needs here and how to fix it, or choose another (isolator = krun, from env DEVSANDBOX_ISOLATOR)"},
		{"user file", []string{"HOME=" + home}, config.Flags{},
			"; `devsandbox doctor` (with the same flags) shows what the docker isolator needs here and how to fix it, or choose another (isolator = docker, from " + user + ")"},
	} {
		cfg, _, err := config.Load(config.LoadOptions{Environ: tt.environ, UID: 1000, GID: 1000, Flags: tt.flags})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		a, out, errb := testApp()
		err = a.degrade("enforce", cfg, cause)
		if !errors.Is(err, isolator.ErrUnavailable) || err.Error() != cause.Error()+tt.want || out.Len()+errb.Len() != 0 {
			t.Errorf("%s: %v (stdout %q, stderr %q)\nwant %s%s", tt.name, err, out, errb, cause, tt.want)
		}
	}
	// A protection that could not be applied is not an isolator that cannot run: no
	// other isolator is proposed for it.
	prot := fmt.Errorf("%w: %w", isolator.ErrProtection, cause)
	cfg, _, err := config.Load(config.LoadOptions{Environ: []string{"HOME=" + home}, UID: 1000, GID: 1000})
	if err != nil {
		t.Fatal(err)
	}
	a, _, _ := testApp()
	if err := a.degrade("enforce", cfg, prot); err != prot {
		t.Errorf("protection error: %v, want it unchanged", err)
	}
}
