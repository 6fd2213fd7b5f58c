package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/internal/enginehost"
	"github.com/devsandbox/devsandbox/isolator/planner"
	"github.com/devsandbox/devsandbox/tools"
)

// `config validate FILE` reports every error a run with `--config FILE` reports from
// the configuration alone, in the same words and with the same exit status: one row
// per place a run checks the configuration (a layer's own values, the values once
// merged over the defaults, the tool tables, the environment the file leaves the
// engine address to).
func TestValidateRefusesWhatARunRefuses(t *testing.T) {
	// A docker CLI config directory whose current context, remote, is reached over ssh.
	dockerDir := t.TempDir()
	writeDockerContext(t, dockerDir, "remote", "ssh://me@build")
	if err := os.WriteFile(filepath.Join(dockerDir, "config.json"), []byte(`{"currentContext":"remote"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, doc string
		env       []string // added to the user's environment
	}{
		{"a bad value", "[sandbox]\nmode = \"never\"\n", nil},
		{"an unknown key", "[sandbox]\nmodes = \"off\"\n", nil},
		{"a duplicate key", "[sandbox]\nmode = \"auto\"\nmode = \"off\"\n", nil},
		{"a loopback egress.allow entry", "[egress]\nallow = [\"127.0.0.1\"]\n", nil},
		{"an HTTPS credential without proxy.mitm", "[[proxy.credentials]]\nhost = \"api.example.com\"\nheader = \"Authorization\"\nvalue_env = \"TOKEN\"\n", nil},
		{"proxy.git_push without proxy.mitm", "[proxy]\ngit_push = [\"agent/*\"]\n", nil},
		{"proxy.git_push with egress past the proxy", "[proxy]\nmitm = true\ngit_push = [\"agent/*\"]\n[egress]\nmode = \"open\"\n", nil},
		{"an unknown tool", "[tools.nosuchtool]\nenabled = false\n", nil},
		{"key = proxy for a tool without keys", "[tools.git]\nkey = \"proxy\"\n", nil},
		{"a docker.host scheme no client dials", "[docker]\nhost = \"ftp://x\"\n", nil},
		{"a docker.host over ssh", "[docker]\nhost = \"ssh://user@host\"\n", nil},
		{"a tcp docker.host without a port", "[docker]\nhost = \"tcp://host\"\n", nil},
		{"DOCKER_HOST over ssh with the docker isolator", "isolator = \"docker\"\n", []string{"DOCKER_HOST=ssh://user@host"}},
		{"DOCKER_HOST of a scheme no client dials", "isolator = \"docker\"\n", []string{"DOCKER_HOST=ftp://x"}},
		{"DOCKER_CONTEXT over ssh with the docker isolator", "isolator = \"docker\"\n", []string{"DOCKER_CONFIG=" + dockerDir, "DOCKER_CONTEXT=remote"}},
		{"the current docker context over ssh with the docker isolator", "isolator = \"docker\"\n", []string{"DOCKER_CONFIG=" + dockerDir}},
		{"keep_container with the krun isolator", "isolator = \"krun\"\n[docker]\nkeep_container = true\n", nil},
	}
	base := testProject(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := append(slices.Clip(base), tc.env...)
			file := filepath.Join(t.TempDir(), "config.toml")
			if err := os.WriteFile(file, []byte(tc.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			var runOut, runErr bytes.Buffer
			run := &app{stdout: &runOut, stderr: &runErr, environ: env}
			runCode := run.main([]string{"--config", file, "--dry-run", "--", "true"})
			if runCode != exitFailure || runErr.Len() == 0 {
				t.Fatalf("a run accepts the file (exit %d); the row tests nothing:\n%s", runCode, runErr.String())
			}
			var out, errb bytes.Buffer
			val := &app{stdout: &out, stderr: &errb, environ: env}
			code := val.main([]string{"config", "validate", file})
			if code != runCode || errb.String() != runErr.String() || out.Len() != 0 {
				t.Errorf("config validate: exit %d, stdout %q, stderr\n%s\na run: exit %d, stderr\n%s", code, out.String(), errb.String(), runCode, runErr.String())
			}
		})
	}
}

// A file a run accepts, validate accepts: the check is not stricter than a run.
func TestValidateAcceptsWhatARunAccepts(t *testing.T) {
	env := testProject(t)
	file := filepath.Join(t.TempDir(), "config.toml")
	doc := "[proxy]\nmitm = true\ngit_push = [\"agent/*\"]\n[tools.git]\nenabled = false\n[docker]\nhost = \"tcp://127.0.0.1:2376\"\n"
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := planner.Load(config.Flags{ConfigFile: file}, env, tools.Default()); err != nil {
		t.Fatalf("a run refuses the file: %v", err)
	}
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, environ: env}
	if code := a.main([]string{"config", "validate", file}); code != 0 || out.String() != file+": valid\n" {
		t.Errorf("config validate: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// testProject makes the working directory a fresh project, with a home of its own,
// and returns the environment of a user there.
func testProject(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	if err := os.Mkdir(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(proj)
	return []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_STATE_HOME=" + filepath.Join(home, ".state"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".data"), "PATH=" + os.Getenv("PATH")}
}

// `config trust` refuses a project file whose tool tables every run would refuse,
// with the message `config validate` gives for it, and records nothing.
func TestTrustRefusesAnUnknownTool(t *testing.T) {
	env := testProject(t)
	if err := os.WriteFile(config.ProjectFileName, []byte("[tools.nosuchtool]\nenabled = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var vOut, vErr bytes.Buffer
	val := &app{stdout: &vOut, stderr: &vErr, environ: env}
	if code := val.main([]string{"config", "validate", config.ProjectFileName}); code != exitFailure {
		t.Fatalf("config validate accepts the file (exit %d)", code)
	}
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, environ: env}
	code := a.main([]string{"config", "trust"})
	proj, _ := os.Getwd()
	want := strings.ReplaceAll(vErr.String(), " "+config.ProjectFileName+":", " "+filepath.Join(proj, config.ProjectFileName)+":")
	if code != exitFailure || errb.String() != want || out.Len() != 0 {
		t.Errorf("config trust: exit %d, stdout %q, stderr\n%s\nwant\n%s", code, out.String(), errb.String(), want)
	}
	host, err := config.HostFromEnviron(env, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(config.TrustFile(host)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("trust records written: %v", err)
	}
}

// writeDockerContext makes docker CLI context name, with endpoint host, under the
// docker config directory dir, as the docker CLI lays it out.
func writeDockerContext(t *testing.T, dir, name, host string) {
	t.Helper()
	meta := filepath.Join(dir, "contexts", "meta", enginehost.ContextID(name))
	if err := os.MkdirAll(meta, 0o700); err != nil {
		t.Fatal(err)
	}
	doc := `{"Name":"` + name + `","Endpoints":{"docker":{"Host":"` + host + `"}}}`
	if err := os.WriteFile(filepath.Join(meta, "meta.json"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
}

// An ssh:// docker context is reported by `config validate` in the words a launch
// uses (engineaddr.Resolve) and doctor's docker row gives (docker.Isolator.Check):
// `docker context "NAME": ` and the address's own refusal. Under isolator = auto the
// file is valid: the context may serve the docker CLI alone, and a launch that
// reaches docker says so then.
func TestValidateDockerContext(t *testing.T) {
	env := testProject(t)
	dockerDir := t.TempDir()
	writeDockerContext(t, dockerDir, "remote", "ssh://me@build")
	env = append(env, "DOCKER_CONFIG="+dockerDir, "DOCKER_CONTEXT=remote")
	file := filepath.Join(t.TempDir(), "config.toml")
	for doc, want := range map[string]string{
		"isolator = \"docker\"\n": "devsandbox: docker context \"remote\": \"ssh://me@build\": devsandbox does not speak to an engine over ssh; forward its socket (ssh -nNT -L /ABSOLUTE/SOCKET:/var/run/docker.sock HOST) and set docker.host = \"unix:///ABSOLUTE/SOCKET\"\n",
		"isolator = \"auto\"\n":   "",
		// docker.host decides the address: the context is not asked.
		"isolator = \"docker\"\n[docker]\nhost = \"unix:///var/run/docker.sock\"\n": "",
	} {
		if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		a := &app{stdout: &out, stderr: &errb, environ: env}
		code := a.main([]string{"config", "validate", file})
		if want == "" && (code != 0 || errb.Len() != 0) || want != "" && (code != exitFailure || errb.String() != want) {
			t.Errorf("%q: exit %d, stdout %q, stderr\n%s\nwant\n%s", doc, code, out.String(), errb.String(), want)
		}
	}
}

// `config init` writes a file that `config validate` accepts, and, given an existing
// file, leaves it as it is and exits 125 naming it, as its help says.
func TestConfigInitNeverOverwrites(t *testing.T) {
	env := testProject(t)
	file := filepath.Join(t.TempDir(), "config.toml")
	a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, environ: env}
	if code := a.main([]string{"config", "init", file}); code != 0 {
		t.Fatalf("config init: exit %d", code)
	}
	if code := a.main([]string{"config", "validate", file}); code != 0 {
		t.Fatalf("config validate refuses the starter file: exit %d", code)
	}
	if err := os.WriteFile(file, []byte("# mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	a = &app{stdout: &out, stderr: &errb, environ: env}
	code := a.main([]string{"config", "init", file})
	if got, _ := os.ReadFile(file); code != exitFailure || string(got) != "# mine\n" || !strings.Contains(errb.String(), file+": not overwriting it") || out.Len() != 0 {
		t.Errorf("config init over a file: exit %d, stdout %q, stderr %q, file %q", code, out.String(), errb.String(), got)
	}
}
