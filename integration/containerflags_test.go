//go:build integration

package integration

import (
	"fmt"
	"os"
	"testing"
)

// --image and --keep-container ask for a container. When the run's isolator is bwrap
// (chosen, or picked by isolator = auto), which runs none, the run is refused before
// anything starts: exit 125, the flag, the isolator and the fix.
func TestContainerFlagsUnderBwrap(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	const usage = "Run `devsandbox --help` for usage.\n"
	image := "devsandbox: --image devsandbox-test/busybox:1 names a container image, but the bwrap isolator (%s) runs no container, so the run would ignore it; use --isolator docker or --isolator krun to run in that image, or drop --image\n" + usage
	keep := "devsandbox: --keep-container keeps a docker container between runs, but the bwrap isolator (%s) runs no container, so the run would ignore it; use --isolator docker to keep one, or drop --keep-container\n" + usage
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--isolator=auto", "--image", "devsandbox-test/busybox:1"}, fmt.Sprintf(image, "isolator = auto picked it here")},
		{[]string{"--keep-container"}, fmt.Sprintf(keep, "isolator = auto picked it here")},
		{[]string{"--isolator=bwrap", "--image=devsandbox-test/busybox:1"}, fmt.Sprintf(image, "from flag --isolator")},
		{[]string{"--isolator", "bwrap", "--keep-container"}, fmt.Sprintf(keep, "from flag --isolator")},
	}
	marker := p.path("proj/ran")
	for _, tc := range cases {
		r := run(t, p.dir, nil, "", append(tc.args, "--", "/bin/sh", "-c", "touch "+marker)...)
		if r.code != 125 || r.stderr != tc.want || r.stdout != "" {
			t.Errorf("%q: want exit 125 and\n%s%s", tc.args, tc.want, r)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%q: the command ran", tc.args)
		}
	}
	// --keep-container=false asks for nothing: the run goes on.
	if r := run(t, p.dir, nil, "", "--isolator=bwrap", "--keep-container=false", "--", "/bin/sh", "-c", "echo ok"); r.code != 0 || r.stdout != "ok\n" {
		t.Errorf("--keep-container=false:\n%s", r)
	}
}
