package krun

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// supervisorOutEnv names the file the stand-in supervisor (TestMain) writes the
// podman its PATH lookup finds to.
const supervisorOutEnv = "DEVSANDBOX_TEST_SUPERVISOR_OUT"

// TestMain stands in for devsandbox-krun's supervisor role when StartService starts
// this test binary as it (os.Executable): it looks podman up as Supervise does, with
// the environment StartService gave it, writes what it found, and fails.
func TestMain(m *testing.M) {
	if out := os.Getenv(supervisorOutEnv); out != "" && len(os.Args) == 4 && os.Args[1] == SuperviseArg {
		p, err := exec.LookPath("podman")
		if err != nil {
			p = err.Error()
		}
		_ = os.WriteFile(out, []byte(p), 0o600)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestServiceStartsTheJudgedPodman: podman's service is started from the podman the
// launch judged, never from a lookup of PATH made after the judgement: a podman a
// sandbox plants meanwhile in a PATH entry before the judged one's (project A's
// .venv/bin, empty when judged; the window spans the wait for the turn to use the
// service) is not the one started.
func TestServiceStartsTheJudgedPodman(t *testing.T) {
	d := t.TempDir()
	proj := filepath.Join(d, "proj")
	venv := filepath.Join(proj, ".venv", "bin")
	sys := filepath.Join(d, "sys")
	rec := filepath.Join(d, "data", "devsandbox", "proj-12345678")
	for _, dir := range []string{venv, sys, rec} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(rec, "project"), []byte(proj+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	podman := filepath.Join(sys, "podman")
	if err := os.WriteFile(podman, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_DATA_HOME", filepath.Join(d, "data"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(d, "state"))
	t.Setenv("PATH", venv+":"+sys)
	out := filepath.Join(d, "supervisor-found")
	t.Setenv(supervisorOutEnv, out)
	judged, err := (&Isolator{}).podmanStartable()
	if err != nil || judged != podman {
		t.Fatalf("podmanStartable with podman in %s = %q, %v", sys, judged, err)
	}
	// The window: a sandbox of project A plants podman on PATH, before the judged one.
	if err := os.WriteFile(filepath.Join(venv, "podman"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(d, "run", "podman", "devsandbox-krun.sock")
	if err := (osHost{}).StartService(context.Background(), sock, "krun", judged); err == nil {
		t.Fatal("the stand-in supervisor failed, StartService did not say so")
	}
	if got, err := os.ReadFile(out); err != nil || string(got) != podman {
		t.Errorf("podman's service was started with the podman at %q (%v), not the one judged, %s", got, err, podman)
	}
}
