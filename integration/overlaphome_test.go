//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docker.home's default, /home/<user>, contains a host home /home/<user>/<dir>: there
// the default is the host home's path instead (a home inside the other would nest a
// path's two places), and the run works as at any home: $HOME is the host home's path,
// a hidden path below it is hidden, the project is writable. A docker.home set to
// /home/<user> is refused, naming the fix. The home is a throwaway /home/dsb-ovl-*/x
// (root makes it): a user of that name has no home of its own here, and the test
// user's own is left alone. It needs the suite to run as root (it does in CI).
func TestOverlappingHomeDefault(t *testing.T) {
	if !it.asOther {
		if os.Getenv("CI") != "" {
			t.Fatal("making a home below /home needs the suite to run as root, as it does in CI")
		}
		t.Skip("making a home below /home needs the suite to run as root")
	}
	forEachDocker(t, func(t *testing.T, iso string) {
		user := "dsb-ovl-" + randHex(3)
		base := "/home/" + user
		home := base + "/x"
		proj := home + "/proj"
		for _, d := range []string{base, home, proj, home + "/.ssh"} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		env := append([]string{"HOME=" + home, "USER=" + user, "LOGNAME=" + user}, xdgEnv(home)...)
		t.Cleanup(func() {
			r := run(t, home, append(env, "DOCKER_HOST="+engineOf(iso)), "", "sandboxes", "rm", projectName(proj))
			if r.code != 0 && !strings.Contains(r.stderr, "no sandbox") {
				t.Errorf("sandboxes rm %s:\n%s", projectName(proj), r)
			}
			os.RemoveAll(base)
		})
		if err := os.WriteFile(home+"/.ssh/id_test", []byte(hideSecret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(home+"/home.toml", []byte("[docker]\nhome = \""+base+"\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_ = filepath.WalkDir(base, func(p string, _ os.DirEntry, err error) error {
			if err == nil {
				err = os.Lchown(p, it.uid, it.gid)
			}
			return err
		})

		script := `echo "$HOME"; cat ~/.ssh/id_test ` + home + `/.ssh/id_test 2>/dev/null; echo made > ` + proj + `/made; echo end`
		r := run(t, proj, env, "", "--isolator="+iso, "--egress=none", "--", "/bin/sh", "-c", script)
		if want := home + "\nend\n"; r.code != 0 || r.stdout != want {
			t.Fatalf("a run at a host home inside /home/<user>: want stdout %q\n%s", want, r)
		}
		if b, err := os.ReadFile(proj + "/made"); err != nil || string(b) != "made\n" {
			t.Errorf("the project's file: %q, %v", b, err)
		}

		r = run(t, proj, env, "", "--isolator="+iso, "--config="+home+"/home.toml", "--", "true")
		want := `docker.home: "` + base + `" contains your home (` + home + `): set it to ` + home + `, or to a path neither above nor below it`
		if r.code != 125 || r.stdout != "" || !strings.Contains(r.stderr, want) {
			t.Errorf("docker.home = %q with the home %s: want 125 and %q\n%s", base, home, want, r)
		}
	})
}
