package bwrap_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/bwrap"
	"github.com/devsandbox/devsandbox/isolator/planner"
	"github.com/devsandbox/devsandbox/tools"
)

// libraryPlan builds a real Plan for a scratch project, the way a harness would.
func libraryPlan(t *testing.T) (*isolator.Plan, string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, proj := filepath.Join(root, "home"), filepath.Join(root, "home", "proj")
	if err := os.MkdirAll(filepath.Join(proj, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, ".env"), []byte("SECRET=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "USER=u", "PATH=/usr/bin:/bin", "API_TOKEN=tok-123"}
	cfg, _, err := config.Load(config.LoadOptions{ProjectDir: proj, Environ: env, UID: os.Getuid(), GID: os.Getgid(),
		Flags: config.Flags{Egress: ptr("none"), Env: []string{"API_TOKEN"}}})
	if err != nil {
		t.Fatal(err)
	}
	pr := planner.OS(proj)
	pr.Executable = func() (string, error) { return exec.LookPath("true") } // no devsandbox-init in unit tests
	p, _, err := planner.Build(cfg, tools.NewRegistry(tools.Shell()), pr, planner.Request{})
	if err != nil {
		t.Fatal(err)
	}
	return p, proj
}

func ptr(s string) *string { return &s }

func TestWrapArgvShape(t *testing.T) {
	p, _ := libraryPlan(t)
	// The syscall filter travels through a descriptor.
	if _, err := bwrap.WrapArgv(p, []string{"true"}); !errors.Is(err, bwrap.ErrNeedsFiles) {
		t.Fatalf("a filtered plan: %v, want ErrNeedsFiles", err)
	}
	p.Syscalls.Unfiltered = true
	argv, err := bwrap.WrapArgv(p, []string{"echo", "hi"})
	if err != nil {
		t.Fatal(err)
	}
	for _, banned := range []string{"--file", "--ro-bind-data", "--ready-fd=3", "tok-123"} {
		if slices.Contains(argv, banned) {
			t.Errorf("WrapArgv holds %q: %q", banned, argv)
		}
	}
	if i := slices.Index(argv, "/tmp"); i < 1 || argv[i-1] != "--tmpfs" {
		t.Errorf("WrapArgv /tmp is not a tmpfs: %q", argv)
	}
	p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Data, Dest: "/etc/x", Content: []byte("x")})
	if _, err := bwrap.WrapArgv(p, []string{"true"}); !errors.Is(err, bwrap.ErrNeedsFiles) {
		t.Fatalf("a Data mount: %v, want ErrNeedsFiles", err)
	}
}

// TestWrapArgvRuns runs the wrapped command for real: the secret arrives through the
// environment, the .env is masked, the project is writable.
func TestWrapArgvRuns(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("bwrap is required in CI")
		}
		t.Skip("bwrap not installed")
	}
	p, proj := libraryPlan(t)
	p.Self = "" // the harness runs its own command: no init, no syscall filter
	p.Syscalls.Unfiltered = true
	p.Limits.Pids = 0 // RLIMIT_NPROC is the initBin's to set
	argv, err := bwrap.WrapArgv(p, []string{"/bin/sh", "-c", `echo "$API_TOKEN"; cat .env; echo ok > out`})
	if err != nil {
		t.Fatal(err)
	}
	if err := bwrap.PrepareHost(p); err != nil {
		t.Fatal(err)
	}
	env, err := bwrap.Env(p)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(context.Background(), argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, proj
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "tok-123\n" {
		t.Fatalf("wrapped run: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(proj, "out")); err != nil || strings.TrimSpace(string(b)) != "ok" {
		t.Fatalf("project not writable through the wrapped run: %q %v", b, err)
	}
}

// TestFilterNeedsInit: without the init as pid 1, bwrap's own unfiltered pid 1 would
// be reachable from the sandbox (ptrace), so a filtered plan needs the init.
func TestFilterNeedsInit(t *testing.T) {
	p, _ := libraryPlan(t)
	p.Self = ""
	if _, err := bwrap.Command(context.Background(), p, []string{"true"}); err == nil || !strings.Contains(err.Error(), "devsandbox-init") {
		t.Fatalf("Command without devsandbox-init: %v, want an error naming it", err)
	}
}
