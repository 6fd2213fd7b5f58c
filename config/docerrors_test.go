package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDocsErrorExamples: the error messages docs/configuration.md shows are the ones
// the loader gives, word for word (for a user "me" whose home is /home/me).
func TestDocsErrorExamples(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	home := filepath.Join(root, "home", "me")
	environ := []string{"HOME=" + home, "USER=me"}
	host, err := HostFromEnviron(environ, 1000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(home, "src", "myproject")
	projectFile := filepath.Join(project, ProjectFileName)
	// shown is err as devsandbox prints it, with the test's root taken off the paths.
	shown := func(err error) string {
		if err == nil {
			return "no error"
		}
		return "devsandbox: " + strings.ReplaceAll(err.Error(), root, "") + "\n"
	}

	// A bad value in the user file.
	user := writeUserFile(t, home, "[sandbox]\nmode = \"enforce\"\ntmp = \"ramdisk\"\n")
	_, _, err = Load(LoadOptions{Environ: environ, UID: 1000, GID: 1000})
	bad := shown(err)
	if err := os.Remove(user); err != nil {
		t.Fatal(err)
	}

	// Credentials that contradict each other: one placeholder for two values.
	user = writeUserFile(t, home, `[proxy]
mitm = true
[[proxy.credentials]]
host = "api.openai.com"
header = "Authorization"
format = "Bearer {}"
value_env = "OPENAI_API_KEY"
placeholder_env = "OPENAI_API_KEY"
[[proxy.credentials]]
host = "gw.corp.test"
header = "Authorization"
format = "Bearer {}"
value_env = "GW_API_KEY"
placeholder_env = "OPENAI_API_KEY"
`)
	_, _, err = Load(LoadOptions{Environ: environ, UID: 1000, GID: 1000})
	clash := shown(err)
	if err := os.Remove(user); err != nil {
		t.Fatal(err)
	}

	// A container home that contains the host home.
	user = writeUserFile(t, home, "[docker]\nhome = \""+filepath.Dir(home)+"\"\n")
	_, _, err = Load(LoadOptions{Environ: environ, UID: 1000, GID: 1000})
	homeAbove := shown(err)
	if err := os.Remove(user); err != nil {
		t.Fatal(err)
	}

	// A project file loosening a protection: refused by config trust and by a run alike.
	writeFile(t, projectFile, "[sandbox]\nmode = \"off\"\n")
	_, err = Trust(host, projectFile, time.Now())
	looser := shown(err)

	// A trusted project file that changed since.
	writeFile(t, projectFile, "[sandbox]\nmode = \"enforce\"\n")
	if _, err := Trust(host, projectFile, time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	writeFile(t, projectFile, "[sandbox]\nmode = \"enforce\"\ntmp = \"tmpfs\"\n")
	_, _, err = Load(LoadOptions{ProjectDir: project, Environ: environ, UID: 1000, GID: 1000})
	changed := shown(err)

	// A repository nested in a project whose file is trusted, without a file of its own.
	writeFile(t, projectFile, "[sandbox]\nmode = \"enforce\"\n")
	if _, err := Trust(host, projectFile, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(project, ".git"), filepath.Join(project, "sub", ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err = Load(LoadOptions{ProjectDir: filepath.Join(project, "sub"), Environ: environ, UID: 1000, GID: 1000})
	nested := shown(err)

	for what, msg := range map[string]string{"bad value": bad, "clashing credentials": clash, "looser project file": looser, "changed since trusted": changed, "docker.home above the home": homeAbove, "nested project": nested} {
		if !strings.Contains(string(doc), msg) {
			t.Errorf("%s: docs/configuration.md does not show the message the loader gives:\n%s", what, msg)
		}
	}
}
