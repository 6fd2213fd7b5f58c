package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/devsandbox/devsandbox/config"
)

// --image and --keep-container ask for a container; the bwrap isolator runs none. A
// run that would ignore them is refused before anything is planned or started (125,
// the status of every misuse), naming the flag, the isolator and the fix. The same
// keys in a config file's [docker] section are not the user's ask for this run (one
// file serves machines with and without docker) and pass.
func TestContainerFlagsRefusedUnderBwrap(t *testing.T) {
	const usage = "Run `devsandbox --help` for usage.\n"
	cases := []struct {
		name string
		args []string
		want string // stderr; "" when the run goes on
	}{
		{"--image", []string{"--isolator", "bwrap", "--image", "alpine:3", "--dry-run", "--", "true"},
			"devsandbox: --image alpine:3 names a container image, but the bwrap isolator (from flag --isolator) runs no container, so the run would ignore it; use --isolator docker or --isolator krun to run in that image, or drop --image\n" + usage},
		{"--keep-container", []string{"--isolator=bwrap", "--keep-container", "--dry-run", "--", "true"},
			"devsandbox: --keep-container keeps a docker container between runs, but the bwrap isolator (from flag --isolator) runs no container, so the run would ignore it; use --isolator docker to keep one, or drop --keep-container\n" + usage},
		{"isolator from the environment", []string{"--image", "alpine:3", "--dry-run", "--", "true"},
			"devsandbox: --image alpine:3 names a container image, but the bwrap isolator (from env DEVSANDBOX_ISOLATOR) runs no container, so the run would ignore it; use --isolator docker or --isolator krun to run in that image, or drop --image\n" + usage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := append(testProject(t), "DEVSANDBOX_ISOLATOR=bwrap")
			var out, errb bytes.Buffer
			a := &app{stdout: &out, stderr: &errb, environ: env}
			if code := a.main(tc.args); code != exitFailure || errb.String() != tc.want || out.Len() != 0 {
				t.Errorf("exit %d, stdout %q, stderr\n%s\nwant\n%s", code, out.String(), errb.String(), tc.want)
			}
		})
	}
}

// --keep-container=false asks for nothing bwrap cannot do, and [docker] keys in a
// config file are left to the machines that run docker: neither is refused, and
// neither warns.
func TestContainerSettingsPassUnderBwrap(t *testing.T) {
	env := testProject(t)
	file := filepath.Join(t.TempDir(), "config.toml")
	doc := "isolator = \"bwrap\"\n[docker]\nimage = \"alpine:3\"\nkeep_container = true\n[krun]\nimage = \"alpine:3\"\n"
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, environ: env}
	if code := a.main([]string{"config", "validate", file}); code != 0 || out.String() != file+": valid\n" || errb.Len() != 0 {
		t.Errorf("config validate: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	no := false
	if err := containerFlags(config.Flags{KeepContainer: &no}, "bwrap", "flag --isolator"); err != nil {
		t.Errorf("--keep-container=false refused: %v", err)
	}
}

// Under isolator = auto the flags are judged once auto has picked: refused when it
// picked bwrap (integration's TestContainerFlagsUnderAuto runs the whole path), let
// through when it picked a container isolator.
func TestContainerFlagsAfterAuto(t *testing.T) {
	img, keep := "alpine:3", true
	f := config.Flags{Image: &img, KeepContainer: &keep}
	err := containerFlags(f, "bwrap", "isolator = auto picked it here")
	want := "--image alpine:3 names a container image, but the bwrap isolator (isolator = auto picked it here) runs no container, so the run would ignore it; use --isolator docker or --isolator krun to run in that image, or drop --image"
	var ue usageError
	if !errors.As(err, &ue) || err.Error() != want {
		t.Errorf("got %v\nwant usage error %s", err, want)
	}
	for _, iso := range []string{"docker", "krun"} {
		if err := containerFlags(f, iso, "isolator = auto picked it here"); err != nil {
			t.Errorf("%s: %v", iso, err)
		}
	}
}
