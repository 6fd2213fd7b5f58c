//go:build integration

package integration

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The watch's put back of a submodule's config (the version from before the run, after
// the sandbox's was quarantined) happens in a directory a sandbox can write: here a
// concurrent session of the project, told each name made there by inotify, renames a
// symlink to its own config (core.fsmonitor) over the new file before it reaches the
// name. The host must never put anything but the content it wrote at the name: no link
// of the sandbox's, whichever session's watch puts back.
func TestGitPutBackRace(t *testing.T) {
	requireGit(t)
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		src := p.newRepo("subsrc")
		p.newRepo("proj")
		mustHostGit(t, p.dir, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "sub")
		mustHostGit(t, p.dir, "commit", "-qm", "sub")
		p.installAttack("proj/attack")
		marker := p.path("PWNED")
		p.write("proj/payload", "[core]\n\tfsmonitor = \""+fsmonitor(marker)+"\"\n")
		subdir := p.path("proj/.git/modules/sub")

		// Session B: makes the submodule's config long (comments: a safe change, and
		// the version each watch then puts back, slow to write), then swaps.
		b := command(t.Context(), p.dir, baseEnv(), "--isolator="+iso, "--", "./attack", "puttemp",
			subdir, "config", p.path("proj/payload"), "900000", p.path("proj/.stop"))
		var bErr bytes.Buffer
		b.Stderr = &bErr
		bOut, _ := b.StdoutPipe()
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		lines := newLineReader(t, bOut)
		stopped := false
		stopB := func() {
			if !stopped {
				stopped = true
				p.write("proj/.stop", "")
				_ = b.Wait()
			}
		}
		defer stopB()
		lines.waitFor("armed")

		// Session A: plants core.fsmonitor in the submodule's config and exits; a
		// watch quarantines it and puts the long version back.
		a := run(t, p.dir, gitEnv, "", "--isolator="+iso, "--", "/bin/sh", "-c",
			`printf '[core]\n\tfsmonitor = "`+fsmonitor(marker)+`"\n' >> .git/modules/sub/config && echo wrote`)
		if !strings.Contains(a.stdout, "wrote") {
			t.Fatalf("session A:\n%s", a)
		}
		stopB()
		var last string
		planted := 0
		for l := lines.next(); l != ""; l = lines.next() {
			if l == "planted" {
				planted++
			}
			last = l
		}
		reports := a.stderr + bErr.String()
		t.Logf("session B: %s", last)
		if planted > 0 {
			t.Errorf("the put back renamed the sandbox's symlink to %s over the submodule's config %d time(s) (%s); the watch reported:\n%s",
				p.path("proj/payload"), planted, last, reports)
		}
		if !regexp.MustCompile(`swaps=\d+ planted=\d+`).MatchString(last) {
			t.Fatalf("session B did not finish its watch: %q\n%s", last, bErr.String())
		}
		if !strings.Contains(reports, "modules/sub/config") || !strings.Contains(reports, "back in place") {
			t.Errorf("no watch reported the submodule's config quarantined and put back:\n%s", reports)
		}
		fi, err := os.Lstat(subdir + "/config")
		if err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("the submodule's config after both runs: %v, %v; want a regular file", fi, err)
		}
		if cfg, _ := os.ReadFile(subdir + "/config"); strings.Contains(string(cfg), "fsmonitor") {
			t.Errorf("the submodule's config names core.fsmonitor after both runs")
		}
		assertNotRun(t, marker, p.dir, p.path("proj/sub"))
	})
}
