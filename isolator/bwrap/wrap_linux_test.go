package bwrap_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/bwrap"
	"github.com/devsandbox/devsandbox/isolator/planner"
	"github.com/devsandbox/devsandbox/isolator/projlock"
	"github.com/devsandbox/devsandbox/isolator/runmark"
	"github.com/devsandbox/devsandbox/isolator/tmpdir"
	"github.com/devsandbox/devsandbox/isolator/watch"
	"github.com/devsandbox/devsandbox/tools"
)

// libraryPlan builds a real Plan for a scratch project, the way a harness would.
func libraryPlan(t *testing.T) (*isolator.Plan, string) {
	t.Helper()
	return libraryPlanWith(t, nil)
}

// libraryPlanWith is libraryPlan with setup, when set, called on the project
// directory before the Plan is built.
func libraryPlanWith(t *testing.T, setup func(proj string)) (*isolator.Plan, string) {
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
	if setup != nil {
		setup(proj)
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

// watchPlan holds a library session of p for the rest of the test, as a harness does
// around a command it runs through WrapArgv or Command.
func watchPlan(t *testing.T, p *isolator.Plan) {
	t.Cleanup(librarySession(t, p))
}

// librarySession is what a harness does around the commands it runs (bwrap.Begin);
// the returned end is called once they exited.
func librarySession(t *testing.T, p *isolator.Plan) (end func()) {
	t.Helper()
	s, err := bwrap.Begin(context.Background(), p, func(s string) { t.Log(s) })
	if err != nil {
		t.Fatal(err)
	}
	return s.End
}

func TestWrapArgvShape(t *testing.T) {
	p, _ := libraryPlan(t)
	watchPlan(t, p)
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
	watchPlan(t, p)
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

// TestLibraryPasswdNamesHome: ssh and `~user` read the home from the passwd entry,
// not $HOME. libraryPlan's HOME is a scratch directory the host's passwd entry does
// not name, so WrapArgv's and Command's /etc/passwd must name it (SystemView.Passwd),
// read-only: the sandbox cannot write the file it is shown from, nor reach WrapArgv's
// copy in the project's state.
func TestLibraryPasswdNamesHome(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("bwrap is required in CI")
		}
		t.Skip("bwrap not installed")
	}
	script := `grep "^[^:]*:[^:]*:$(id -u):" /etc/passwd | head -n 1 | cut -d: -f6 | sed 's/^/PWHOME=/'
echo "HOME=$HOME"
(echo 'x:x:0:0::/:/bin/sh' >>/etc/passwd) 2>/dev/null && echo WROTE_PASSWD
true`
	for _, how := range []string{"WrapArgv", "Command"} {
		t.Run(how, func(t *testing.T) {
			p, proj := libraryPlan(t)
			if p.System.Passwd == nil {
				t.Fatal("the plan has no SystemView.Passwd: its HOME is the one the host's entry names")
			}
			p.Self = ""
			p.Syscalls.Unfiltered = true
			p.Limits.Pids = 0
			copyPath, err := bwrap.PasswdFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(copyPath, p.StateDir+"/") {
				t.Fatalf("PasswdFile %s is not in the project's state %s", copyPath, p.StateDir)
			}
			// A link planted where the copy goes is replaced, not written through.
			if err := os.MkdirAll(filepath.Dir(copyPath), 0o700); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(t.TempDir(), "target")
			if err := os.WriteFile(target, []byte("planted\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, copyPath); err != nil {
				t.Fatal(err)
			}
			if err := bwrap.PrepareHost(p); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Lstat(copyPath); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o444 {
				t.Fatalf("WrapArgv's passwd copy %s: %v %v, want a regular file, mode 0444", copyPath, fi, err)
			}
			if b, _ := os.ReadFile(target); string(b) != "planted\n" {
				t.Fatalf("PrepareHost wrote through a link planted at %s: %q", copyPath, b)
			}
			watchPlan(t, p)
			inner := []string{"/bin/sh", "-c", script + "\n[ -e " + copyPath + " ] && echo SEES_COPY\ntrue"}
			cmd := libraryCmd(t, p, how, inner)
			if how == "WrapArgv" {
				if i := slices.Index(cmd.Args, copyPath); i < 1 || cmd.Args[i-1] != "--ro-bind" || cmd.Args[i+1] != "/etc/passwd" {
					t.Errorf("WrapArgv does not bind %s read-only at /etc/passwd: %q", copyPath, cmd.Args)
				}
			}
			cmd.Dir = proj
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("wrapped run: %v\n%s", err, out)
			}
			want := "PWHOME=" + p.User.HostHome + "\nHOME=" + p.User.HostHome + "\n"
			if string(out) != want {
				t.Errorf("%s: the passwd entry does not name the sandbox's $HOME:\n%s\nwant\n%s", how, out, want)
			}
		})
	}
}

// TestLibraryRunWatched is the attack of a command a harness runs through Command or
// WrapArgv on what the host trusts later: it writes a lefthook remote's config into
// .git/info/lefthook-remotes (absent at launch: no read-only mount holds it), which
// the host's next commit would run. The CLI's runs watch the project and move it to
// the quarantine; a library command must not run unwatched.
func TestLibraryRunWatched(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("bwrap is required in CI")
		}
		t.Skip("bwrap not installed")
	}
	const script = `mkdir -p .git/info/lefthook-remotes/evil && echo 'pre-commit: {commands: {x: {run: "touch /tmp/pwned"}}}' > .git/info/lefthook-remotes/evil/lefthook.yml`
	for _, how := range []string{"WrapArgv", "Command"} {
		t.Run(how, func(t *testing.T) {
			p, proj := libraryPlan(t)
			p.Self = ""
			p.Syscalls.Unfiltered = true
			p.Limits.Pids = 0
			planted := filepath.Join(proj, ".git/info/lefthook-remotes/evil/lefthook.yml")
			run := func() error {
				var cmd *exec.Cmd
				if how == "WrapArgv" {
					argv, err := bwrap.WrapArgv(p, []string{"/bin/sh", "-c", script})
					if err != nil {
						return err
					}
					env, err := bwrap.Env(p)
					if err != nil {
						t.Fatal(err)
					}
					cmd = exec.Command(argv[0], argv[1:]...)
					cmd.Env = env
				} else {
					var err error
					if cmd, err = bwrap.Command(context.Background(), p, []string{"/bin/sh", "-c", script}); err != nil {
						return err
					}
				}
				cmd.Dir = proj
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("wrapped run: %v\n%s", err, out)
				}
				return nil
			}
			// Outside a session, unwatched: refused before anything runs, even with
			// the host prepared and a watch of the harness's own.
			if err := bwrap.PrepareHost(p); err != nil {
				t.Fatal(err)
			}
			own := watch.Start(p, func(string) {})
			if err := run(); !errors.Is(err, isolator.ErrProtection) {
				t.Errorf("%s with a watch but no session = %v, want ErrProtection", how, err)
			}
			own.Stop()
			if err := run(); !errors.Is(err, isolator.ErrProtection) {
				t.Errorf("%s with no watch running = %v, want ErrProtection", how, err)
			}
			if _, err := os.Lstat(planted); err == nil {
				t.Fatalf("an unwatched %s run left %s in the project for the host's git", how, planted)
			}
			// Watched as the docs say: what the command planted is moved aside.
			var said []string
			s, err := bwrap.Begin(context.Background(), p, func(s string) { said = append(said, s) })
			if err != nil {
				t.Fatal(err)
			}
			err = run()
			s.End()
			if err != nil {
				t.Fatalf("%s with the watch running: %v", how, err)
			}
			if _, err := os.Lstat(planted); err == nil {
				t.Errorf("the watch left %s in the project", planted)
			}
			if len(said) == 0 {
				t.Error("the watch reported nothing")
			}
		})
	}
}

// pruneSees reports whether `devsandbox sandboxes prune` (and `rm`) would keep p's
// project as in use: its exclusive try of the project's lock fails (a run is
// starting), or its check of the runs (cmd/devsandbox runGoingOn) finds a held
// session /tmp or run mark. Otherwise prune removes the sandbox home and the state
// directory.
func pruneSees(t *testing.T, p *isolator.Plan) bool {
	t.Helper()
	unlock, ok, err := projlock.TryExclusive(filepath.Dir(p.StateDir), filepath.Base(p.StateDir))
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return true
	}
	defer unlock()
	now := time.Now()
	return tmpdir.Held(filepath.Join(p.StateDir, "tmp"), now) || runmark.Held(p.StateDir, "", now)
}

// TestLibraryRunSeenByPrune is the attack of `devsandbox sandboxes prune --days 0`
// (or `rm`) on a harness's running command: prune removes a project's sandbox home
// and state directory when no run of it holds the project's lock, a session /tmp or
// a run mark. A command run through Command or WrapArgv must count as a run, for as
// long as the harness's session lasts; once it ends, prune may remove the project.
func TestLibraryRunSeenByPrune(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("bwrap is required in CI")
		}
		t.Skip("bwrap not installed")
	}
	for _, how := range []string{"WrapArgv", "Command"} {
		t.Run(how, func(t *testing.T) {
			p, proj := libraryPlan(t)
			p.Self = ""
			p.Syscalls.Unfiltered = true
			p.Limits.Pids = 0
			end := librarySession(t, p)
			inner := []string{"/bin/sh", "-c", `echo up; read x; exit 0`}
			cmd := libraryCmd(t, p, how, inner)
			cmd.Dir = proj
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			for _, f := range cmd.ExtraFiles {
				if f != nil {
					f.Close()
				}
			}
			line := make([]byte, 3)
			if _, err := io.ReadFull(out, line); err != nil || string(line) != "up\n" {
				t.Fatalf("the command did not start: %q, %v", line, err)
			}
			busy := pruneSees(t, p)
			in.Close()
			if err := cmd.Wait(); err != nil {
				t.Fatalf("wrapped run: %v", err)
			}
			if !busy {
				t.Errorf("while a %s command ran, prune took its project for idle: it would remove the sandbox home %s and the state directory %s (the passwd copy the command binds included)", how, p.SandboxHome, p.StateDir)
			}
			end()
			if pruneSees(t, p) {
				t.Errorf("after the harness's session ended, prune still takes the project for in use")
			}
		})
	}
}

// TestLibrarySessionTmpHeld is the attack of prune's sweep of session dirs on a
// harness's command whose Plan names a session /tmp (Plan.Tmp.Session) the harness
// made itself: `sandboxes prune` removes every session dir over a minute old whose
// lock is free, whatever the run marks say, so the command's /tmp, bound read-write,
// would be emptied under it. A command may run only with a session dir a lock holds
// (tmpdir.Acquire, as Run's).
func TestLibrarySessionTmpHeld(t *testing.T) {
	p, _ := libraryPlan(t)
	p.Self = ""
	p.Syscalls.Unfiltered = true
	p.Limits.Pids = 0
	watchPlan(t, p)
	base := filepath.Join(p.StateDir, "tmp")
	dir := filepath.Join(base, "harness-made")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * tmpdir.PruneAge)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	p.Tmp = isolator.Tmp{Kind: "session", Dir: base, Session: "harness-made"}
	inner := []string{"/bin/sh", "-c", "true"}
	_, werr := bwrap.WrapArgv(p, inner)
	_, cerr := bwrap.Command(context.Background(), p, inner)
	swept := tmpdir.Prune(filepath.Dir(p.StateDir), time.Now(), true)
	for how, err := range map[string]error{"WrapArgv": werr, "Command": cerr} {
		if !errors.Is(err, isolator.ErrProtection) {
			t.Errorf("%s with a session /tmp no lock holds = %v, want ErrProtection (prune would remove it while the command runs: %q)", how, err, swept)
		}
	}
	// Held as Run holds its own: accepted.
	sess, err := tmpdir.Acquire(base)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Release()
	p.Tmp.Session = sess.Name
	if _, err := bwrap.WrapArgv(p, inner); err != nil {
		t.Errorf("WrapArgv with a held session /tmp: %v", err)
	}
}

// libraryCmd is inner under p the way a harness runs it: how is "WrapArgv" (the
// command line, with Env's environment) or "Command".
func libraryCmd(t *testing.T, p *isolator.Plan, how string, inner []string) *exec.Cmd {
	t.Helper()
	if how != "WrapArgv" {
		cmd, err := bwrap.Command(context.Background(), p, inner)
		if err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	argv, err := bwrap.WrapArgv(p, inner)
	if err != nil {
		t.Fatal(err)
	}
	env, err := bwrap.Env(p)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	return cmd
}
