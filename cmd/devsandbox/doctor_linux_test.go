package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/bwrap"
	"github.com/devsandbox/devsandbox/isolator/diskguard"
)

// In a project doctor builds the Plan a run from there would get, as --dry-run builds
// it (writing nothing), and hands it to the bwrap backend, whose mount-table row
// counts the reads of that launch's argv, and whose watched directories the disk
// reserve's rows judge. Outside a project it has none
// (TestDoctorConfigOutsideAProject).
func TestDoctorPlansInAProject(t *testing.T) {
	home := t.TempDir()
	proj := filepath.Join(home, "src", "app")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(proj)
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "PATH=" + os.Getenv("PATH")}
	var errb bytes.Buffer
	a := &app{stdout: &bytes.Buffer{}, stderr: &errb, environ: env}
	cfg, _, planned, broken, planErr, err := a.doctorConfig(config.Flags{})
	if err != nil || broken || planErr != nil || errb.String() != "" {
		t.Fatalf("doctorConfig: err %v, broken %v, plan %v, warnings %q", err, broken, planErr, errb.String())
	}
	if planned == nil {
		t.Fatal("no Plan in a project")
	}
	if want, _ := filepath.EvalSymlinks(proj); planned.Project.Dir != want {
		t.Errorf("the Plan's project is %s, want %s", planned.Project.Dir, want)
	}
	a.planned = planned
	b, ok := a.isolatorTable(cfg, nil)["bwrap"]().(*bwrap.Isolator)
	if !ok || b.Planned != planned {
		t.Errorf("the bwrap isolator does not have doctor's Plan")
	}
	// The reserve's rows judge what that run would watch: the project's file system.
	rows := diskguard.Rows(uint64(cfg.Sandbox.DiskReserveBytes()), diskguard.Watched(planned), diskguard.HostFree)
	if len(rows) == 0 || !strings.Contains(rows[0].Detail+rows[0].Reason, "on the file system holding "+planned.Project.Dir) {
		t.Errorf("doctor's disk reserve rows do not name the project's file system: %+v", rows)
	}
	// Built as for --dry-run: nothing in the home but the project.
	entries, err := os.ReadDir(home)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "src" {
			t.Errorf("doctor wrote %s in the home", e.Name())
		}
	}
}

// When the configuration loads but the Plan a run from here gets does not build (a
// configured path missing on this host), doctor says so, as the run would, and
// exits 1: before, it said "can run" and exited 0 while every run stopped (125).
func TestDoctorSaysARunWouldStop(t *testing.T) {
	home := t.TempDir()
	proj := filepath.Join(home, "src", "app")
	user := filepath.Join(home, ".config", "devsandbox", "config.toml")
	for _, d := range []string{proj, filepath.Dir(user)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(user, []byte("[sandbox]\nro_binds = [\""+home+"/gone\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(proj)
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "PATH=" + os.Getenv("PATH")}
	var errb bytes.Buffer
	a := &app{stdout: &bytes.Buffer{}, stderr: &errb, environ: env}
	_, _, planned, broken, planErr, err := a.doctorConfig(config.Flags{})
	want := "devsandbox: warning: a run from here would stop: configuration does not fit this host: sandbox.ro_binds (" + user + ":2): " + home + "/gone does not exist; create it or remove the entry\n"
	if err != nil || broken || planned != nil || !errors.Is(planErr, isolator.ErrConfig) || errb.String() != want {
		t.Errorf("doctorConfig: err %v, broken %v, plan %v, plan error %v, warnings\n%s\nwant a plan error and\n%s", err, broken, planned != nil, planErr, errb.String(), want)
	}
}
