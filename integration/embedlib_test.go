//go:build integration

package integration

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// A harness's own command (bwrap.Command) in a library session it
// holds open, against the devsandbox binary a user runs while the harness works
// (TestLibraryRunSeenByPrune asks prune's checks in process; this runs the program):
//   - `sandboxes prune --days 0`, its host part (no engine: its docker part would
//     remove other tests' objects from the shared engine, and refuses without one):
//     the command's session /tmp, made two minutes old (past the minute prune grants
//     a starting run), stays, and the command reads back what it wrote there;
//   - `sandboxes prune --days 0 --dry-run` with the engine: keeps the project, "a run
//     of it is going on", where it would otherwise remove it;
//   - `sandboxes rm NAME`: refuses; the sandbox home and the state directory stay.
//
// With sandbox.tmp = "tmpfs" the session's run mark alone says a run is going on.
// Once the command exited and the session ended, prune would remove the project and
// rm removes its home and state.
func TestEmbedLibraryPrune(t *testing.T) {
	if !slices.Contains(isolators(), "bwrap") || !slices.Contains(isolators(), localDocker) {
		t.Skip("needs bwrap and docker among DEVSANDBOX_IT_ISOLATORS")
	}
	requireBwrap(t)
	const how = "Command"
	for _, mem := range []bool{false, true} {
		t.Run(map[bool]string{false: "session tmp", true: "tmpfs"}[mem], func(t *testing.T) {
			p := newProject(t)
			cfg := p.noPodmanConfig()
			if mem {
				p.write("tmpfs.toml", "[sandbox]\ntmp = \"tmpfs\"\n[krun]\nruntime = \"runc\"\npodman_socket = \""+p.path("no-podman.sock")+"\"\n")
				cfg = p.path("tmpfs.toml")
			}
			e := startEmbed(t, embedJob{Iso: "bwrap", Dirs: []string{p.dir}, Library: true, Config: cfg,
				Script: `echo kept > /tmp/note && echo started && read x && cat /tmp/note`}, p.root)
			var f []string
			for l := e.lines.next(); l != "out 0 started"; l = e.lines.next() {
				switch {
				case strings.HasPrefix(l, "out 0 paths "):
					f = strings.Fields(strings.TrimPrefix(l, "out 0 paths "))
				case l == "" || strings.HasPrefix(l, "result "):
					_ = e.cmd.Wait()
					t.Fatalf("the harness's %s command did not start: %q\nstderr:\n%s", how, l, e.stderr.String())
				}
			}
			if len(f) != 3 {
				t.Fatalf("harness paths line: %q", f)
			}
			home, state, tmp := f[0], f[1], f[2]
			held := map[string]string{"sandbox home": home, "state directory": state}
			if mem != (tmp == "-") {
				t.Fatalf("the harness's session /tmp is %q with sandbox.tmp = tmpfs %v", tmp, mem)
			}
			if !mem {
				held["session /tmp"] = tmp + "/note"
				old := time.Now().Add(-2 * time.Minute)
				if err := os.Chtimes(tmp, old, old); err != nil {
					t.Fatal(err)
				}
			}
			noEngine := append(embedXDG(p.root), "DOCKER_HOST=unix://"+p.path("no-engine.sock"))
			engine := append(embedXDG(p.root), "DOCKER_HOST="+engineOf(localDocker))
			kept := "kept " + p.name() + " (unused for 0 days): a run of it is going on\n"
			rs := []result{run(t, p.dir, noEngine, "", "--config", cfg, "sandboxes", "prune", "--days", "0")}
			if r := run(t, p.dir, engine, "", "--config", cfg, "sandboxes", "prune", "--days", "0", "--dry-run"); r.code != 0 || !strings.Contains(r.stdout, kept) || strings.Contains(r.stdout, "would remove "+p.name()+":") {
				t.Errorf("prune --dry-run during the harness's %s command: want %q and no removal of %s\n%s", how, kept, p.name(), r)
			}
			if r := run(t, p.dir, noEngine, "", "--config", cfg, "sandboxes", "rm", p.name()); r.code == 0 || !strings.Contains(r.stderr, "a run of it is going on") {
				t.Errorf("sandboxes rm during the harness's %s command: want a refusal, a run of it is going on\n%s", how, r)
			} else {
				rs = append(rs, r)
			}
			for what, path := range held {
				if _, err := os.Lstat(path); err != nil {
					t.Errorf("during the harness's %s command, prune or rm took its %s: %v\n%v", how, what, err, rs)
				}
			}
			fmt.Fprintln(e.in, "go")
			e.in.Close()
			outs, res := e.results(t, time.Minute)
			if want := []string{"kept", "exit 0"}; res[0] != "0 nil" || !slices.Equal(outs[0], want) {
				t.Errorf("harness: result %q, output after started %q; want \"0 nil\", %q\nstderr:\n%s", res[0], outs[0], want, e.stderr.String())
			}
			if r := run(t, p.dir, engine, "", "--config", cfg, "sandboxes", "prune", "--days", "0", "--dry-run"); !strings.Contains(r.stdout, "would remove "+p.name()+": unused for 0 days\n") {
				t.Errorf("prune --dry-run after the session ended would not remove the project:\n%s", r)
			}
			if r := run(t, p.dir, noEngine, "", "--config", cfg, "sandboxes", "rm", p.name()); r.code != 0 {
				t.Errorf("sandboxes rm after the session ended:\n%s", r)
			}
			for what, path := range map[string]string{"sandbox home": home, "state directory": state} {
				if _, err := os.Lstat(path); err == nil {
					t.Errorf("after the session ended, rm left the %s %s", what, path)
				}
			}
		})
	}
}
