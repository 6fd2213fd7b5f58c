//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoaderEnvNotHonouredOnTheHost: a variable the dynamic loader reads, set for the
// sandbox (`-e`, as `env.set` in a trusted project file may), is the command's, not
// bwrap's: bwrap runs on the host, before any namespace, and a loader that honoured
// LD_PRELOAD or LD_LIBRARY_PATH pointing into the project would run there what the
// sandbox wrote. LD_DEBUG_OUTPUT shows it without a compiler: the host's loader
// writes its debug log to a host directory the sandbox does not see. Run directly,
// and through an early start from the launch's own record (whose plain values are
// what bwrap is started with). Inside, the command still gets the variables.
func TestLoaderEnvNotHonouredOnTheHost(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	p.mkdir("outside")
	out := p.path("outside")
	env, state := p.earlyEnv()
	args := []string{"--isolator=bwrap", "--egress=none", "--debug",
		"-e", "LD_DEBUG=statistics", "-e", "LD_DEBUG_OUTPUT=" + filepath.Join(out, "ld"),
		"--", "/bin/sh", "-c", `printf '%s|%s' "$LD_DEBUG" "$LD_DEBUG_OUTPUT" > seen`}
	for i, want := range []string{"not made: no record of this launch", "matched"} {
		r := run(t, p.dir, env, "", args...)
		// Inside, the loader writes its log where it can: the command's output is
		// not looked at, the file it wrote is.
		seen, err := os.ReadFile(filepath.Join(p.dir, "seen"))
		if r.code != 0 || err != nil || string(seen) != "statistics|"+filepath.Join(out, "ld") {
			t.Fatalf("launch %d failed, or its command lacks the variables (%q, %v):\n%s", i, seen, err, r)
		}
		if !strings.Contains(r.stderr, "early start: "+want) {
			t.Errorf("launch %d: stderr lacks %q:\n%s", i, "early start: "+want, r.stderr)
		}
		logs, _ := filepath.Glob(filepath.Join(out, "ld*"))
		if len(logs) > 0 {
			t.Fatalf("launch %d: a process on the host honoured the sandbox's LD_DEBUG_OUTPUT: %v", i, logs)
		}
	}
	if left := leftovers(t, state); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestEarlyStartPlantedRecordBinary: a record planted where devsandbox keeps this
// launch's, naming as bubblewrap a program the sandbox could write (in the project),
// is refused before anything starts: the program never runs on the host.
func TestEarlyStartPlantedRecordBinary(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	env, state := p.earlyEnv()
	p.mkdir("outside")
	marker := filepath.Join(p.path("outside"), "ran")
	args := []string{"--isolator=bwrap", "--egress=none", "--debug", "--", "/bin/true"}
	if r := run(t, p.dir, env, "", args...); r.code != 0 {
		t.Fatalf("first launch:\n%s", r)
	}
	recs := records(t, state)
	if len(recs) != 1 {
		t.Fatalf("records %v, want one", recs)
	}
	good, err := os.ReadFile(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	p.write("proj/bin/bwrap", "#!/bin/sh\necho \"$0 $*\" > "+marker+"\nexit 1\n")
	fake := filepath.Join(p.dir, "bin", "bwrap")
	if err := os.Chmod(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(good, &rec); err != nil {
		t.Fatal(err)
	}
	rec["Bwrap"] = fake
	forged, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(recs[0], forged, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(recs[0], it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	r := run(t, p.dir, env, "", args...)
	if _, err := os.Stat(marker); err == nil {
		b, _ := os.ReadFile(marker)
		t.Fatalf("the planted record's program ran on the host: %s", b)
	}
	if r.code != 0 {
		t.Fatalf("the launch with a planted record failed:\n%s", r)
	}
	if !strings.Contains(r.stderr, "early start: not made: launch record refused") {
		t.Errorf("the planted record was not refused:\n%s", r.stderr)
	}
	if left := leftovers(t, state); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
