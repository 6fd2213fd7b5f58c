//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/internal/sh"
)

// Guarantee 1: the project is read-write at its host path; .git/hooks, .git/config and
// .devsandbox.toml are read-only; .git itself stays writable.
func TestProjectView(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("proj/.devsandbox.toml", "")
		p.write("proj/src/main.txt", "hello\n")
		out := p.mustSandbox(iso, nil, `
			pwd
			cat src/main.txt
			echo written > src/new.txt && echo write-ok
			touch .git/hooks/pre-commit 2>/dev/null && echo HOOK-WRITTEN
			echo x >> .git/config 2>/dev/null && echo CONFIG-WRITTEN
			echo x >> .devsandbox.toml 2>/dev/null && echo TOML-WRITTEN
			touch .git/index.lock && rm .git/index.lock && echo git-writable
			mv .git .git-old 2>/dev/null && echo GIT-MOVED
			mv .git/hooks .git/hooks-old 2>/dev/null && echo HOOKS-MOVED
			mv .devsandbox.toml moved.toml 2>/dev/null && echo TOML-MOVED
			true`)
		want := p.dir + "\nhello\nwrite-ok\ngit-writable\n"
		if out != want {
			t.Fatalf("in-sandbox output:\n%s\nwant:\n%s", out, want)
		}
		if b, err := os.ReadFile(p.path("proj/src/new.txt")); err != nil || string(b) != "written\n" {
			t.Fatalf("file written in the sandbox not on the host: %q %v", b, err)
		}
		if _, err := os.Stat(p.path("proj/.git/hooks/pre-commit")); !os.IsNotExist(err) {
			t.Fatalf("a hook was planted: %v", err)
		}
	})
}

// Guarantee 1: the rest of the home is invisible, hide_paths are masked, siblings and
// symlinks leading out of the project reach nothing.
func TestHostHomeInvisible(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		writeHome(t, ".ssh/id_ed25519", "PRIVATE-KEY-BAIT\n")
		writeHome(t, ".aws/credentials", "AWS-BAIT\n")
		p.write("sibling/secret.txt", "SIBLING-BAIT\n")
		if err := os.Symlink(p.path("sibling/secret.txt"), p.path("proj/escape")); err != nil {
			t.Fatal(err)
		}
		_ = os.Lchown(p.path("proj/escape"), it.uid, it.gid)
		r := p.sandbox(iso, nil, `
			cat ~/.ssh/id_ed25519 ~/.aws/credentials ../sibling/secret.txt escape 2>/dev/null
			ls ~/.aws 2>/dev/null
			ls ../sibling 2>/dev/null
			echo done`)
		if r.code != 0 || r.stdout != "done\n" {
			t.Fatalf("host files reachable from the sandbox:\n%s", r)
		}
	})
}

// Guarantee 1: a hidden directory with files in it appears empty and cannot be
// written through, wherever it lies: in a read-write or read-only bind or a host
// mount, in the project, and in the sandbox home, where a previous run filled it while
// the host had no such directory; with the containers' home at the host home's path
// and elsewhere, where the path is at two places (see homeElsewhere);
// open to all (0755), to its owner only (0700, as ~/.ssh and ~/.gnupg are), or not
// even listable by its owner (0300). podman copies a directory's files into a tmpfs
// mounted over it unless told not to, and runc gives that tmpfs the mode of the
// directory it covers.
func TestHideDirs(t *testing.T) {
	cases := []struct {
		name, hide string
		// bind is the setting that shows the directory "shared" at its host path.
		bind string
		// planted: a previous run left a file in the sandbox home's copy of the
		// directory, while the host had none.
		planted bool
		modes   []os.FileMode
	}{
		{name: "rw_binds", hide: "shared/a/secret", bind: "rw_binds"},
		{name: "ro_binds", hide: "shared/a/secret", bind: "ro_binds", modes: []os.FileMode{0o755}},
		{name: "host_mounts", hide: "shared/a/secret", bind: "host_mounts", modes: []os.FileMode{0o755}},
		{name: "project", hide: "proj/conf/secret", bind: "rw_binds"},
		{name: "sandbox home filled earlier", hide: "hidden/secret", bind: "rw_binds", planted: true},
	}
	forEachIsolatorOf(t, withTCP(isolators()), func(t *testing.T, iso string) {
		forEachContainerHome(t, func(t *testing.T, home string) {
			var hs []hiddenDir
			for _, c := range cases {
				modes := c.modes
				if modes == nil {
					modes = []os.FileMode{0o755, 0o700, 0o300}
				}
				for _, mode := range modes {
					hs = append(hs, hiddenDir{name: fmt.Sprintf("%s/%o", c.name, mode), bind: c.bind, hide: c.hide, planted: c.planted, mode: mode})
				}
			}
			hideDirs(t, iso, home, hs)
		})
	})
}

// hiddenDir is one case of TestHideDirs: the directory hide, shown by bind at its host
// path, of mode, planted or not (see hideDir).
type hiddenDir struct {
	name, bind, hide string
	planted          bool
	mode             os.FileMode
}

// refused says whether the run hiding h stops by design: the scan for mask_files
// cannot look into a directory of the project that its owner cannot list.
func (h hiddenDir) refused() bool { return h.mode&0o400 == 0 && strings.HasPrefix(h.hide, "proj/") }

// hideDirs runs the cases hs on iso with the containers' home at home. The cases
// whose run is not refused by design share one project and one run, each hiding
// directories of its own with a config listing every case's settings; the run's
// output is split per case (a line "== N" before each case's commands) and each case
// asserts its part and its host directory in a subtest of its own. (A project and a
// launch per case cost 22 launches per isolator, 44 s of the suite on docker.) Where
// that run fails, or an engine refuses anchors, every case runs alone (hideDir), as
// the test did before; a refused case always runs alone.
func hideDirs(t *testing.T, iso, home string, hs []hiddenDir) {
	var together []hiddenDir
	for _, h := range hs {
		if h.refused() || refusesAnchors(iso) {
			t.Run(h.name, func(t *testing.T) { hideDir(t, iso, home, h.bind, h.hide, h.planted, h.mode) })
			continue
		}
		together = append(together, h)
	}
	if len(together) == 0 {
		return
	}
	p := newProject(t)
	binds := map[string][]string{}
	var hides []string
	script := ""
	dirs := make([]string, len(together))
	for i, h := range together {
		tag := fmt.Sprintf("c%02d", i)
		shared := "shared-" + tag
		hide := strings.Replace(h.hide, "shared/", shared+"/", 1)
		hide = strings.Replace(hide, "proj/", "proj/"+tag+"/", 1)
		hide = strings.Replace(hide, "hidden/", "hidden-"+tag+"/", 1)
		p.mkdir(shared)
		entry := p.path(shared)
		if h.bind == "host_mounts" {
			entry += ":" + entry
		}
		binds[h.bind] = append(binds[h.bind], entry)
		dir := p.path(hide)
		dirs[i] = dir
		hides = append(hides, dir)
		rel, _ := filepath.Rel(it.home, dir)
		if h.planted {
			in := filepath.Join(it.home, ".local/share/devsandbox", p.name(), "home", rel)
			writeHome(t, filepath.Join(".local/share/devsandbox", p.name(), "home", rel, "planted"), "planted\n")
			if err := os.Chmod(in, h.mode); err != nil {
				t.Fatal(err)
			}
		}
		p.write(hide+"/key", hideSecret+"\n")
		if err := os.Chmod(dir, h.mode); err != nil {
			t.Fatal(err)
		}
		script += fmt.Sprintf("echo '== %d'; ", i) + hideDirScript(dir, rel)
	}
	script += "echo '== end'"
	config := "[sandbox]\n"
	for _, b := range []string{"rw_binds", "ro_binds", "host_mounts"} {
		if len(binds[b]) > 0 {
			config += fmt.Sprintf("%s = [%s]\n", b, quoteList(binds[b]))
		}
	}
	config += fmt.Sprintf("hide_paths = [%s]\n", quoteList(hides))
	flags := []string{"--egress=none", "--config", p.writeConfigHome(iso, "hide.toml", config, home)}
	r := p.sandbox(iso, flags, script)
	if r.code != 0 {
		t.Logf("the run of the cases together failed; each runs alone:\n%s", r)
		for _, h := range together {
			t.Run(h.name, func(t *testing.T) { hideDir(t, iso, home, h.bind, h.hide, h.planted, h.mode) })
		}
		return
	}
	parts := map[string]string{}
	cur := "before"
	for line := range strings.Lines(r.stdout) {
		if n, ok := strings.CutPrefix(strings.TrimSpace(line), "== "); ok {
			cur = n
			continue
		}
		parts[cur] += line
	}
	if parts["before"] != "" || parts["end"] != "" {
		t.Fatalf("output outside the cases' parts:\n%s", r)
	}
	for i, h := range together {
		t.Run(h.name, func(t *testing.T) {
			if out := parts[strconv.Itoa(i)]; out != "" {
				t.Fatalf("the hidden directory %s is not empty and read-only:\n%s", dirs[i], out)
			}
			hideDirHostUnchanged(t, dirs[i])
		})
	}
}

// hideDirScript looks for the hidden directory dir at its host path and in the
// sandbox home (rel is its path below the home: the same path unless the containers'
// home is elsewhere): it prints nothing when dir is empty and read-only at both.
func hideDirScript(dir, rel string) string {
	script := ""
	for _, q := range []string{sh.Quote(dir), `"$HOME"/` + sh.Quote(rel)} {
		script += fmt.Sprintf("ls -A %s; cat %s/key %s/planted 2>/dev/null; echo x > %s/new 2>/dev/null && echo WROTE; mkdir %s/d 2>/dev/null && echo MADE; ", q, q, q, q, q)
	}
	return script
}

// hideDirHostUnchanged fails t unless the hidden directory dir holds on the host only
// its key, unchanged.
func hideDirHostUnchanged(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 || ents[0].Name() != "key" {
		t.Fatalf("the host directory changed: %v %v", ents, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "key")); string(b) != hideSecret+"\n" {
		t.Fatalf("the hidden file changed on the host: %q", b)
	}
}

func quoteList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// hideDir hides the directory hide (in the project's scratch directory), which bind
// (or the project) shows at its host path, and looks for it there and in the sandbox
// home: it must appear empty at both, and not be writable.
func hideDir(t *testing.T, iso, home, bind, hide string, planted bool, mode os.FileMode) {
	p := newProject(t)
	p.mkdir("shared")
	dir := p.path(hide)
	entry := p.path("shared")
	if bind == "host_mounts" {
		entry += ":" + entry
	}
	flags := []string{"--egress=none", "--config", p.writeConfigHome(iso, "hide.toml",
		fmt.Sprintf("[sandbox]\n%s = [%q]\nhide_paths = [%q]\n", bind, entry, dir), home)}
	rel, _ := filepath.Rel(it.home, dir)
	if planted {
		in := filepath.Join(it.home, ".local/share/devsandbox", p.name(), "home", rel)
		writeHome(t, filepath.Join(".local/share/devsandbox", p.name(), "home", rel, "planted"), "planted\n")
		if err := os.Chmod(in, mode); err != nil {
			t.Fatal(err)
		}
	}
	p.write(hide+"/key", hideSecret+"\n")
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	script := hideDirScript(dir, rel) + "echo end"
	if mode&0o400 == 0 && strings.HasPrefix(dir, p.dir+"/") {
		// The scan for mask_files cannot look into a directory of the project that
		// its owner cannot list, and the sandbox (its owner) could open it up: every
		// isolator refuses the run alike, naming the directory and the fix.
		r := p.sandbox(iso, flags, script)
		if r.code != 125 || r.stdout != "" || !strings.Contains(r.stderr, dir+": a directory you own is not readable (chmod u+rx it)") {
			t.Fatalf("a project directory its owner cannot list did not stop the run, naming it and the fix:\n%s", r)
		}
		return
	}
	if refusesAnchors(iso) && !planted && bind != "ro_binds" {
		wantAnchorsRefused(t, p.sandbox(iso, flags, script))
		return
	}
	if out := p.mustSandbox(iso, flags, script); out != "end\n" {
		t.Fatalf("the hidden directory %s is not empty and read-only:\n%s", dir, out)
	}
	hideDirHostUnchanged(t, dir)
}

// Guarantee 1: mask_files are masked everywhere in the project, including a file
// created on the host since the previous run.
func TestMaskFiles(t *testing.T) {
	forEachIsolatorOf(t, withRootless(isolators()), func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("proj/.env", "TOKEN=root-bait\n")
		p.write("proj/app/.env.local", "TOKEN=nested-bait\n")
		p.write("proj/README", "readme\n")
		script := `cat .env app/.env.local .env.production README 2>/dev/null; echo x > .env 2>/dev/null && echo WROTE; echo end`
		if refusesAnchors(iso) {
			wantAnchorsRefused(t, p.sandbox(iso, nil, script))
			return
		}
		if out := p.mustSandbox(iso, nil, script); out != "readme\nend\n" {
			t.Fatalf("first run:\n%s", out)
		}
		p.write("proj/.env.production", "TOKEN=new-bait\n")
		if out := p.mustSandbox(iso, nil, script); out != "readme\nend\n" {
			t.Fatalf("a .env created since the last run is not masked:\n%s", out)
		}
		if b, _ := os.ReadFile(p.path("proj/.env")); string(b) != "TOKEN=root-bait\n" {
			t.Fatalf("masked file changed on the host: %q", b)
		}
	})
}

// Guarantee 2: the sandbox home persists per project.
func TestSandboxHomePersists(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.mustSandbox(iso, nil, `echo kept > ~/.state-file`)
		if out := p.mustSandbox(iso, nil, `cat ~/.state-file; test "$HOME" = "`+containerHome(iso)+`" && echo home-ok`); out != "kept\nhome-ok\n" {
			t.Fatalf("sandbox home did not persist:\n%s", out)
		}
		if _, err := os.Stat(filepath.Join(it.home, ".state-file")); !os.IsNotExist(err) {
			t.Fatalf("sandbox home wrote into the real home: %v", err)
		}
	})
}

// Guarantee 3: /tmp is private to the session and removed afterwards.
func TestPrivateTmp(t *testing.T) {
	forEachIsolatorOf(t, withTCP(isolators()), func(t *testing.T, iso string) {
		p := newProject(t)
		hostTmp, err := os.CreateTemp("", "host-visible-")
		if err != nil {
			t.Fatal(err)
		}
		hostTmp.Close()
		defer os.Remove(hostTmp.Name())
		// What the command leaves in /tmp includes directories their owner cannot
		// list (000) or empty (0500): the session dir must go all the same.
		out := p.mustSandbox(iso, nil, `ls -A /tmp; echo in-sandbox > /tmp/marker
mkdir -p /tmp/locked/inner /tmp/ro/inner && touch /tmp/locked/inner/f /tmp/ro/inner/f &&
chmod 000 /tmp/locked/inner /tmp/locked && chmod 500 /tmp/ro && cat /tmp/marker`)
		if out != "in-sandbox\n" {
			t.Fatalf("/tmp is not private and empty:\n%s", out)
		}
		if _, err := os.Stat("/tmp/marker"); !os.IsNotExist(err) {
			t.Fatalf("sandbox /tmp leaked to the host: %v", err)
		}
		sessions := filepath.Join(it.home, ".local/state/devsandbox", p.name(), "tmp")
		if left, _ := os.ReadDir(sessions); len(left) != 0 {
			t.Fatalf("session /tmp left behind in %s: %v", sessions, left)
		}
	})
}

// Guarantee 4: the environment is an allowlist plus passthrough; DOCKER_HOST is unset.
func TestEnvAllowlist(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		cfg := p.writeConfig(iso, "cfg.toml", "[env]\npassthrough = [\"PASS_ME\"]\nset = { SET_ME = \"configured\" }\n")
		// DOCKER_HOST names the engine the docker isolator itself uses: a working one.
		dockerHost := "unix:///x.sock"
		if isDocker(iso) {
			dockerHost = engineOf(iso)
		}
		r := run(t, p.dir, []string{"NOT_ME=leak", "PASS_ME=passed", "DOCKER_HOST=" + dockerHost, "LC_ALL=C"}, "",
			"--isolator="+iso, "--config", cfg, "--", "/bin/sh", "-c",
			`echo "[$NOT_ME][$PASS_ME][$SET_ME][$DOCKER_HOST][$LC_ALL][$DEVSANDBOX]"`)
		if r.code != 0 || r.stdout != "[][passed][configured][][C][1]\n" {
			t.Fatalf("environment:\n%s", r)
		}
	})
}

// Guarantee 7 (exit side): the command's status passes through, 126/127 included.
func TestExitCodes(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("proj/not-exec.sh", "#!/bin/sh\necho hi\n")
		tests := []struct {
			name string
			args []string
			code int
		}{
			{"status", []string{"/bin/sh", "-c", "exit 3"}, 3},
			{"not found", []string{"no-such-command-xyz"}, 127},
			{"not found path", []string{"./missing"}, 127},
			{"not executable", []string{"./not-exec.sh"}, 126},
			{"killed by signal", []string{"/bin/sh", "-c", "kill -TERM $$"}, 143},
			{"true", []string{"true"}, 0},
		}
		for _, tt := range tests {
			r := run(t, p.dir, nil, "", append([]string{"--isolator=" + iso, "--"}, tt.args...)...)
			if r.code != tt.code {
				t.Errorf("%s: exit %d, want %d\n%s", tt.name, r.code, tt.code, r)
			}
		}
	})
}

// Guarantee 6 for the modes this build has: none has no network, open has the host's.
func TestEgressModes(t *testing.T) {
	forEachIsolatorOf(t, withRootless(withTCP(isolators())), func(t *testing.T, iso string) {
		p := newProject(t)
		// localhost is in /etc/hosts (images without getent): a docker container with
		// no network gets none from the engine, but devsandbox's.
		none := p.mustSandbox(iso, []string{"--egress=none"}, `ls /sys/class/net 2>/dev/null || cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '
awk '$1 == "127.0.0.1" { for (i = 2; i <= NF; i++) if ($i == "localhost") { print $1; exit } }' /etc/hosts`)
		if none != "lo\n127.0.0.1\n" {
			t.Fatalf("egress none: interfaces, then localhost's address:\n%s\nwant only lo, then 127.0.0.1", none)
		}
		open := p.mustSandbox(iso, []string{"--egress=open"}, `cat /proc/net/dev | tail -n +3 | wc -l`)
		if strings.TrimSpace(open) == "1" {
			t.Fatalf("egress open: only loopback visible")
		}
	})
}

// Guarantee 5: a secret passed with -e NAME is visible inside, but in no argv of any
// process during the run and not in --dry-run; secret files are 0400.
func TestSecretsNeverInArgv(t *testing.T) {
	forEachIsolatorOf(t, withTCP(isolators()), func(t *testing.T, iso string) {
		p := newProject(t)
		const value = "s3cr3t-VALUE-4242"
		p.write("secret.txt", "file-"+value)
		ctx := t.Context()
		cmd := command(ctx, p.dir, baseEnv("API_TOKEN="+value), "--isolator="+iso, "-e", "API_TOKEN",
			"--secret-file", "DB_PASS="+p.path("secret.txt"), "--", "/bin/sh", "-c",
			`echo "env:$API_TOKEN"; echo "file:$(cat /run/secrets/DB_PASS)"; stat -c "mode:%a" /run/secrets/DB_PASS; echo ready; read _ || true`)
		lr, release := started(t, cmd)
		if got := lr.waitFor("env:"); got != "env:"+value {
			t.Errorf("secret env inside: %q", got)
		}
		if got := lr.waitFor("file:"); got != "file:file-"+value {
			t.Errorf("secret file inside: %q", got)
		}
		if got := lr.waitFor("mode:"); got != "mode:400" {
			t.Errorf("secret file %s", got)
		}
		lr.waitFor("ready")
		// The command is running: scan every process's argv on the host.
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		scanned := 0
		for _, f := range procs {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			scanned++
			if strings.Contains(string(b), value) {
				t.Errorf("secret value in %s: %q", f, strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
		if scanned < 5 {
			t.Fatalf("scanned only %d processes", scanned)
		}
		release()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("sandboxed command: %v", err)
		}

		dry := run(t, p.dir, []string{"API_TOKEN=" + value}, "", "--isolator="+iso, "--dry-run", "-e", "API_TOKEN",
			"--secret-file", "DB_PASS="+p.path("secret.txt"), "--", "true")
		if dry.code != 0 || strings.Contains(dry.stdout+dry.stderr, value) || !strings.Contains(dry.stdout, "API_TOKEN") {
			t.Fatalf("--dry-run leaks the secret or omits its name:\n%s", dry)
		}
	})
}
