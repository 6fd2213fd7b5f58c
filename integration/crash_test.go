//go:build integration

package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashImage is the image the crash tests run in the throwaway engine: small enough to
// copy in per test run.
const crashImage = "devsandbox-test/busybox:1"

// crashCase is one way of running: a one-shot container, or a kept one.
type crashCase struct {
	name  string
	flags []string
}

var crashCases = []crashCase{
	{"once", []string{"--egress=proxy"}},
	{"kept", []string{"--egress=proxy", "--keep-container"}},
}

// crashRun is a run of `echo ready; sleep 1000` in the throwaway engine, with the
// sandbox home and state in the project's scratch dir (prune sees only this project's).
type crashRun struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan struct{}
}

func crashEnv(te *throwawayEngine, p *project) []string {
	return baseEnv("DOCKER_HOST="+te.host, "XDG_DATA_HOME="+p.path("data"), "XDG_STATE_HOME="+p.path("state"))
}

func startCrashRun(t *testing.T, te *throwawayEngine, p *project, c crashCase) *crashRun {
	t.Helper()
	args := append([]string{"--isolator=docker", "--image", crashImage}, c.flags...)
	args = append(args, "--", "/bin/sh", "-c", "echo ready; sleep 1000")
	r := &crashRun{cmd: command(t.Context(), p.dir, crashEnv(te, p), args...), done: make(chan struct{})}
	r.cmd.Stderr = &r.stderr
	stdout, _ := r.cmd.StdoutPipe()
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lr := newLineReader(t, stdout)
	go func() {
		_ = r.cmd.Wait()
		close(r.done)
	}()
	lr.waitFor("ready")
	return r
}

// prune runs `devsandbox sandboxes prune` against the throwaway engine.
func crashPrune(t *testing.T, te *throwawayEngine, p *project) string {
	t.Helper()
	r := run(t, p.dir, []string{"DOCKER_HOST=" + te.host, "XDG_DATA_HOME=" + p.path("data"), "XDG_STATE_HOME=" + p.path("state")}, "", "--config", p.noPodmanConfig(), "sandboxes", "prune")
	if r.code != 0 {
		t.Fatalf("sandboxes prune: %s", r)
	}
	return r.stdout
}

// assertClean fails unless the project has nothing in the engine but, for a kept
// container, the container itself, its companion and its endpoint volume.
func assertClean(t *testing.T, te *throwawayEngine, p *project, c crashCase, when string) {
	t.Helper()
	cs, vs := te.objects(t, p)
	slices.Sort(cs)
	var want []string
	if slices.Contains(c.flags, "--keep-container") {
		want = []string{"devsandbox-" + p.name(), "devsandbox-" + p.name() + "-px"}
	}
	if !slices.Equal(cs, want) {
		t.Errorf("%s: containers %v, want %v", when, cs, want)
	}
	// The kept container's own volumes (its endpoint volume, its init's, the content
	// volumes whose files it binds) stay with it.
	var kept []string
	if want != nil && len(cs) > 0 {
		for _, c := range cs {
			kept = append(kept, strings.Fields(te.docker(t, "inspect", "--format", "{{range .Mounts}}{{.Name}} {{.Source}} {{end}}", c))...)
		}
	}
	vs = slices.DeleteFunc(vs, func(v string) bool {
		return slices.ContainsFunc(kept, func(k string) bool { return k == v || strings.Contains(k, "/"+v+"/_data/") })
	})
	if len(vs) > 0 {
		t.Errorf("%s: volumes left: %v", when, vs)
	}
}

// waitGone waits (bounded) until no container of the project but a kept one runs, has
// exited or is being removed: every one-shot container and companion is auto-removed,
// and holds its volumes until it is gone. "exited" is the step between running and
// removing: a wait that let it through saw the container in neither list, and the
// prune that followed found it removing, its endpoint volume not yet dangling.
func waitGone(t *testing.T, te *throwawayEngine, p *project) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		cs := strings.Fields(te.docker(t, "ps", "-a", "--format", "{{.Names}}", "--filter", "status=running", "--filter", "status=exited", "--filter", "status=removing", "--filter", "label=dev.devsandbox.kept=false",
			"--filter", "label=dev.devsandbox.project="+strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")))
		if len(cs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("containers outlived devsandbox by 20s: %v", cs)
		}
		runtimeYield()
	}
}

// An engine restart while a sandboxed command runs (one-shot and kept, with the
// session's companion): devsandbox ends saying why, and once the engine is back
// nothing of the run is left after `sandboxes prune` (the kept container stays, and
// serves the next run). Another user's look-alike leftover is not touched.
func TestDockerEngineRestartMidRun(t *testing.T) {
	te := newThrowawayEngine(t, crashImage)
	foreign := te.docker(t, "volume", "create", "--label", "dev.devsandbox.project=0badc0de", "--label", "dev.devsandbox.uid=0",
		"--label", "dev.devsandbox.role=init", "--label", "dev.devsandbox.session=x")
	for _, c := range crashCases {
		t.Run(c.name, func(t *testing.T) {
			p := newProject(t)
			r := startCrashRun(t, te, p, c)
			te.restart(t)
			select {
			case <-r.done:
			case <-time.After(30 * time.Second):
				t.Fatal("devsandbox did not end within 30s of the engine's restart")
			}
			if code := r.cmd.ProcessState.ExitCode(); code == 0 || !strings.Contains(r.stderr.String(), "went away while the command ran") {
				t.Errorf("exit %d; want a failure saying the engine went away:\n%s", code, r.stderr.String())
			}
			out := crashPrune(t, te, p)
			assertClean(t, te, p, c, "after the restart and prune:\n"+out)
			if slices.Contains(c.flags, "--keep-container") {
				if out := p.mustSandboxEnv(crashEnv(te, p), append([]string{"--isolator=docker", "--image", crashImage}, c.flags...), "echo still-here"); out != "still-here\n" {
					t.Errorf("the kept container after the restart: %q", out)
				}
			}
		})
	}
	if v := te.docker(t, "volume", "ls", "-q", "--filter", "name="+foreign); v != foreign {
		t.Errorf("prune removed another user's volume %s", foreign)
	}
}

// kill -9 of devsandbox and devsandbox-docker mid-run (one-shot and kept, with the
// session's companion): `sandboxes prune` leaves nothing of the run. A prune while the
// run lives leaves it alone; --dry-run names what a real one removes, and removes nothing.
func TestDockerKill9ThenPrune(t *testing.T) {
	te := newThrowawayEngine(t, crashImage)
	for _, c := range crashCases {
		t.Run(c.name, func(t *testing.T) {
			p := newProject(t)
			r := startCrashRun(t, te, p, c)
			cs, vs := te.objects(t, p)
			crashPrune(t, te, p)
			if cs2, vs2 := te.objects(t, p); !slices.Equal(cs, cs2) || !slices.Equal(vs, vs2) {
				t.Fatalf("prune touched a live run: containers %v then %v, volumes %v then %v", cs, cs2, vs, vs2)
			}
			var pids []int
			for _, pid := range descendants(r.cmd.Process.Pid) {
				if exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); filepath.Base(exe) == "devsandbox-docker" {
					pids = append(pids, pid)
				}
			}
			if len(pids) == 0 {
				t.Fatal("no devsandbox-docker under devsandbox")
			}
			for _, pid := range append(pids, r.cmd.Process.Pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			<-r.done
			waitGone(t, te, p)
			_, left := te.objects(t, p)
			dry := run(t, p.dir, []string{"DOCKER_HOST=" + te.host, "XDG_DATA_HOME=" + p.path("data"), "XDG_STATE_HOME=" + p.path("state")}, "", "sandboxes", "prune", "--dry-run")
			for _, v := range left {
				if strings.HasPrefix(v, "devsandbox-"+p.name()+"-ep-") && !strings.Contains(dry.stdout, "would remove volume "+v) {
					t.Errorf("prune --dry-run does not name the session's endpoint volume %s:\n%s", v, dry)
				}
			}
			if _, now := te.objects(t, p); !slices.Equal(left, now) {
				t.Errorf("prune --dry-run removed volumes: %v, then %v", left, now)
			}
			out := crashPrune(t, te, p)
			assertClean(t, te, p, c, "after kill -9 and prune:\n"+out)
		})
	}
}

// mustSandboxEnv is mustSandbox with env instead of the base environment and flags as
// given (no --isolator added).
func (p *project) mustSandboxEnv(env, flags []string, script string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := command(ctx, p.dir, env, append(flags, "--", "/bin/sh", "-c", script)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		p.t.Fatalf("devsandbox %v: %v\n%s", flags, err, errb.String())
	}
	return out.String()
}
