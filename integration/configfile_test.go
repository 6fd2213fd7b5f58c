//go:build integration

package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestConfigFileInProject: a --config file in the project is one the sandbox can
// write. A run (with or without that file) rewrote it to bind a host directory the
// sandbox could not see, and the next `devsandbox --config FILE` applied it as the
// user's own config: the sandbox widened its next run. Now such a file applies only
// while the trust records hold its content, as the project file does; an untrusted or
// changed one stops the run (125) saying how to trust it. A pipe stays a pipe.
func TestConfigFileInProject(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	t.Cleanup(func() { os.Remove(it.home + "/.config/devsandbox/trusted.toml") })
	p.write("outside/secret", "HOSTSECRET\n")
	file := p.path("proj/dev.toml")
	p.write("proj/dev.toml", "[env]\nset = { FROM_FILE = \"one\" }\n")
	read := "cat " + p.path("outside/secret")

	// The plant: an ordinary run rewrites the file.
	p.mustSandbox("bwrap", nil, fmt.Sprintf(`printf '[sandbox]\nro_binds = [%q]\n' > dev.toml`, p.path("outside")))
	r := p.sandbox("bwrap", []string{"--config", file}, read)
	if strings.Contains(r.stdout, "HOSTSECRET") || r.code != 125 || !strings.Contains(r.stderr, file) || !strings.Contains(r.stderr, "devsandbox config trust "+file) {
		t.Fatalf("a --config file the sandbox rewrote: want the run stopped (125) naming it and how to trust it:\n%s", r)
	}
	// Through a symlink outside the project, the same.
	if err := os.Symlink(file, p.path("link.toml")); err != nil {
		t.Fatal(err)
	}
	if r := p.sandbox("bwrap", []string{"--config", p.path("link.toml")}, read); strings.Contains(r.stdout, "HOSTSECRET") || r.code != 125 {
		t.Fatalf("a link to a --config file in the project: want the run stopped (125):\n%s", r)
	}

	// Reviewed and trusted, it applies, until it changes.
	if r := run(t, p.dir, nil, "", "config", "trust", file); r.code != 0 {
		t.Fatalf("config trust %s:\n%s", file, r)
	}
	if r := p.sandbox("bwrap", []string{"--config", file}, read); r.code != 0 || r.stdout != "HOSTSECRET\n" {
		t.Fatalf("the trusted --config file not applied:\n%s", r)
	}
	p.mustSandbox("bwrap", []string{"--config", file}, `printf '[env]\nset = { FROM_FILE = "two" }\n' >> dev.toml`)
	if r := p.sandbox("bwrap", []string{"--config", file}, "true"); r.code != 125 || !strings.Contains(r.stderr, "changed since it was trusted") {
		t.Fatalf("a trusted --config file changed by the sandbox: want the run stopped (125):\n%s", r)
	}

	// A pipe is no file the sandbox can write: it needs no trust. (The pipe is the test
	// user's own: one the test made as root, the user could not open by name.)
	for _, via := range []string{
		`printf '[env]\nset = { FROM_PIPE = "yes" }\n' | "$0" --isolator=bwrap --config /dev/stdin -- /bin/sh -c 'echo "[$FROM_PIPE]"'`,
		`"$0" --isolator=bwrap --config <(printf '[env]\nset = { FROM_PIPE = "yes" }\n') -- /bin/sh -c 'echo "[$FROM_PIPE]"'`,
	} {
		cmd := command(t.Context(), p.dir, baseEnv())
		cmd.Path, cmd.Args = "/bin/bash", []string{"/bin/bash", "-c", via, it.bin}
		if r := runResult(t, cmd); r.code != 0 || r.stdout != "[yes]\n" {
			t.Errorf("%s:\n%s", via, r)
		}
	}
}
