//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// embedViewScript is the command that reports, for each of paths, what the sandbox
// lets it do, after it wrote "from the command" to create: "ctr r PATH ok CONTENT" (as viewLine) or "ctr r PATH err", and
// "ctr w PATH ok|err" (opening it for appending, writing nothing; one that does not
// exist is not created, so that the harness's Open, after the run, meets the same
// tree).
func embedViewScript(paths []string, create string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "echo from the command >%s; ", shellQuote(create))
	for _, p := range paths {
		fmt.Fprintf(&b, `p=%s; if head -c 200 "$p" >/dev/null 2>&1; then echo "ctr r $p ok $(head -c 200 "$p" | tr '\n' '|')"; else echo "ctr r $p err"; fi; `, shellQuote(p))
		b.WriteString(`if [ -e "$p" ] && ( : >>"$p" ) 2>/dev/null; then echo "ctr w $p ok"; else echo "ctr w $p err"; fi; `)
	}
	return b.String()
}

// A harness's file tools see what its sandbox's command sees: a real run for a Plan
// (bwrap, a docker container, a krun container), the harness's View made as
// architecture.md tells it to, and for each path Open's answer for reading and
// writing compared with what the command inside does there. What Open lets the
// harness read, the command reads with the same content; what Open lets it write,
// the command can write; no host file outside the project and the sandbox home
// (the host's /etc/passwd and /etc/hostname, a file beside the project) is readable
// through Open (on bwrap, whose sandbox sees the host's /etc, only the file beside the project). The answers are also the expected ones: the project file and the
// home file read and write, the mask and the secret file masked, /tmp the
// sandbox's own (no host path in a container).
func TestEmbedViewMatchesSandbox(t *testing.T) {
	// The stand-in for a remote engine (another mount namespace) and the rootless
	// engine run through the same docker Stub, with docker.host naming them.
	isos := append(embedIsolators(), slices.DeleteFunc(isolators(), func(iso string) bool { return iso != remoteDocker && iso != rootlessDocker })...)
	forEachIsolatorOf(t, isos, func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("proj/a.txt", "project file\n")
		p.write("proj/.env", "MASKED=1\n")
		p.write("beside.txt", "beside the project\n")
		p.write("tok", "token-value\n")
		if err := os.Chmod(p.path("tok"), 0o600); err != nil {
			t.Fatal(err)
		}
		home := homeElsewhere // docker.home: the containers' home is not the host home
		if iso == "bwrap" {
			home = it.home
		}
		content := fmt.Sprintf("[secrets.files]\nTOK = %q\n", p.path("tok"))
		harnessIso := iso
		if iso == remoteDocker || iso == rootlessDocker {
			content += fmt.Sprintf("\n[docker]\nhost = %q\n", engineOf(iso))
			if iso == rootlessDocker {
				content += "\n[limits]\npids = 0\n" // the engine here cannot apply one (rootlessArgs)
			}
			harnessIso = localDocker
		}
		cfg := p.writeConfigHome(iso, "config.toml", content, homeElsewhere)
		secret := "/run/secrets/TOK"
		paths := []string{
			filepath.Join(p.dir, "a.txt"), home + "/notes", "/etc/passwd", filepath.Join(p.dir, ".env"),
			secret, "/tmp/probe", "/etc/hostname", p.path("beside.txt"),
		}
		job := embedJob{Iso: harnessIso, Dirs: []string{p.dir}, Script: embedViewScript(paths, home+"/notes"), Config: cfg, ViewPaths: paths}
		e := startEmbed(t, job, p.root)
		outs, res := e.results(t, 2*time.Minute)
		if res[0] != "0 nil" {
			t.Fatalf("run: result %q, output %q\nharness stderr:\n%s", res[0], outs[0], e.stderr.String())
		}
		view, ctr := map[string]string{}, map[string]string{}
		for _, l := range outs[0] {
			f := strings.SplitN(l, " ", 4)
			if len(f) < 4 {
				continue
			}
			switch f[0] {
			case "view":
				view[f[1]+" "+f[2]] = f[3]
			case "ctr":
				ctr[f[1]+" "+f[2]] = f[3]
			}
		}
		// bwrap shows the host's /etc read-only (the system view): the harness reads
		// what the command reads there. A container's /etc is its image's.
		outside := map[string]bool{p.path("beside.txt"): true}
		if iso != "bwrap" {
			outside["/etc/passwd"], outside["/etc/hostname"] = true, true
		}
		for _, name := range paths {
			vr, cr := view["r "+name], ctr["r "+name]
			if strings.HasPrefix(vr, "ok") && vr != cr {
				t.Errorf("Open(%s) let the harness read %q; the command %s: %q", name, strings.TrimPrefix(vr, "ok "), iso, cr)
			}
			if outside[name] && strings.HasPrefix(vr, "ok") {
				t.Errorf("Open(%s), a host file outside the project, read %q", name, strings.TrimPrefix(vr, "ok "))
			}
			if vw, cw := view["w "+name], ctr["w "+name]; vw == "ok" && cw != "ok" {
				t.Errorf("Open(%s, O_WRONLY) let the harness write; the command could not (%q)", name, cw)
			}
		}
		// What each answer must be (ok, or the error's class). /tmp has no host path
		// in a View made before Run: the session /tmp (bwrap) is chosen by Run.
		masked, outsideView := "err masked in the sandbox view", "err not visible in the sandbox view"
		want := map[string][2]string{
			filepath.Join(p.dir, "a.txt"): {"ok project file|", "ok"},
			home + "/notes":               {"ok from the command|", "ok"},
			filepath.Join(p.dir, ".env"):  {masked, masked},
			secret:                        {masked, masked},
			"/tmp/probe":                  {"err not backed by a host path", "err not backed by a host path"},
		}
		if iso != "bwrap" {
			// bwrap shows /etc, and the host home's path is its sandbox home, where
			// the file beside the project does not exist (see outside).
			for _, name := range []string{"/etc/passwd", "/etc/hostname", p.path("beside.txt")} {
				want[name] = [2]string{outsideView, outsideView}
			}
		}
		for name, w := range want {
			if got := [2]string{view["r "+name], view["w "+name]}; got != w {
				t.Errorf("Open(%s) for reading, writing: %q; want %q", name, got, w)
			}
		}
		if t.Failed() {
			t.Logf("harness's View:\n%s\ncommand:\n%s", strings.Join(viewLines(view), "\n"), strings.Join(viewLines(ctr), "\n"))
		}
	})
}

func viewLines(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+" "+v)
	}
	return out
}

// shellQuote is s in single quotes for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
