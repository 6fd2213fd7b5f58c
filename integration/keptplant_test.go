//go:build integration

package integration

import (
	"strings"
	"testing"
)

// plantDeep nests directories below /run/secrets/token (the next session's secret
// file's name) and /dev/shm/deep deeper than the container's open-file limit (its
// pid 1 has the same), each with a locked (000) directory half way and a file at the
// bottom, then locks token (0500: its owner may not remove what it holds without
// chmod first); it adds a 0500 and a 000 directory, each holding a file, in both.
const plantDeep = `python3 - <<'EOF'
import os, resource
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
n = 70000 if hard == resource.RLIM_INFINITY or hard > 70000 else hard + 100
def nest(top):
    os.mkdir(top)
    os.chdir(top)
    for i in range(n):
        os.mkdir("d")
        os.chdir("d")
        if i == n // 2:
            os.mkdir("locked")
            open("locked/f", "w").write("x")
            os.chmod("locked", 0)
    open("f", "w").write("planted")
def locked(path, mode):
    os.mkdir(path)
    open(path + "/f", "w").write("planted")
    os.chmod(path, mode)
nest("/run/secrets/token")
nest("/dev/shm/deep")
os.chdir("/")
os.chmod("/run/secrets/token", 0o500)
for d in ("/run/secrets", "/dev/shm"):
    locked(d + "/ro", 0o500)
    locked(d + "/none", 0)
print("planted", n, "levels, nofile", hard)
EOF`

// listPlanted prints what is left in /run/secrets and /dev/shm.
const listPlanted = `echo "secrets: $(ls -A /run/secrets | tr '\n' ' ')"; echo "shm: $(ls -A /dev/shm | tr '\n' ' ')"`

// A session of a kept container plants, in what the container keeps between sessions
// (/run/secrets, /dev/shm), trees deeper than the container's open-file limit and
// directories their owner cannot empty without chmod, one of them at the name of the
// next session's secret file. The keeper empties both once the session ended, and the
// next session writes its secret file over whatever is at its name: it gets its
// secret, and nothing planted is left. Before, the keeper's removal stopped at the
// limit (too many open files) and at the locked directories, and the next session's
// secret write failed on the directory at its name (exit 125).
func TestKeptPlantedTreesRemoved(t *testing.T) {
	forEachDockerRootless(t, func(t *testing.T, iso string) {
		p := newProject(t)
		keep := []string{"--keep-container", "--egress=none"}
		settle(p, iso, keep)
		out := p.mustSandbox(iso, keep, plantDeep)
		if !strings.HasPrefix(out, "planted ") {
			t.Fatalf("the first session did not plant its trees:\n%s", out)
		}
		t.Logf("%s", strings.TrimSpace(out))
		const secret = "KEPT-PLANT-SECRET-7c2e"
		p.write("token.txt", secret)
		r := run(t, p.dir, nil, "", append([]string{"--isolator=" + iso}, append(keep, "--secret-file", "token="+p.path("token.txt"), "--", "/bin/sh", "-c",
			`echo "secret=$(cat /run/secrets/token)"; `+listPlanted)...)...)
		if want := "secret=" + secret + "\nsecrets: token \nshm: \n"; r.code != 0 || r.stdout != want {
			t.Errorf("the session after the one that planted, given the secret file token: want exit 0 and %q\n%.2000s", want, r)
		}
		if r := p.sandbox(iso, keep, listPlanted); r.code != 0 || r.stdout != "secrets: \nshm: \n" {
			t.Errorf("what the planting session left in the kept container, listed by a later session:\n%.2000s", r)
		}
	})
}

// While another session of the kept container is live, the keeper empties nothing (a
// live session's secret files and IPC objects are its own): a session that plants a
// locked directory at the name of a later session's secret file, and ends, leaves it
// there for that later session. Its init writes its secret file over the directory
// (removing it, however locked, following no link) instead of failing the run.
// Before, the rename failed on the directory (exit 125).
func TestKeptSecretOverPlantedWhileAnotherSessionLives(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		p := newProject(t)
		keep := []string{"--keep-container", "--egress=none"}
		settle(p, iso, keep)
		a, releaseA := started(t, command(t.Context(), p.dir, baseEnv(), append([]string{"--isolator=" + iso}, append(keep, "--", "/bin/sh", "-c", `echo up; read _; echo done`)...)...))
		a.waitFor("up")
		p.mustSandbox(iso, keep, `mkdir -p /run/secrets/token/d/locked && ln -s /home /run/secrets/token/d/out && echo x > /run/secrets/token/d/locked/f && chmod 000 /run/secrets/token/d/locked && chmod 500 /run/secrets/token/d /run/secrets/token`)
		const secret = "KEPT-PLANT-SECRET-91ad"
		p.write("token.txt", secret)
		r := run(t, p.dir, nil, "", append([]string{"--isolator=" + iso}, append(keep, "--secret-file", "token="+p.path("token.txt"), "--", "/bin/sh", "-c",
			`echo "secret=$(cat /run/secrets/token)"; ls -A /run/secrets`)...)...)
		if want := "secret=" + secret + "\ntoken\n"; r.code != 0 || r.stdout != want {
			t.Errorf("a session given the secret file token, with a directory at its name: want exit 0 and %q\n%.2000s", want, r)
		}
		releaseA()
		if got := a.waitFor("done"); got != "done" {
			t.Fatalf("the live session: %q", got)
		}
	})
}
