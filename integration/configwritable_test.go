//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigFileWhereRunWrites: a --config file that the run's own sandbox can write
// (in a directory the same file binds read-write through sandbox.rw_binds or a
// read-write sandbox.host_mounts entry, or in a tool's shared state) is the sandbox's
// to rewrite. The plant drops the bind that made the file writable and binds a host
// directory the sandbox could not see; the next `devsandbox --config FILE` must not
// obey it. An untrusted file there stops the run (125) naming it and the fix; a trusted
// one that changed stops it too.
func TestConfigFileWhereRunWrites(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		cases := []struct {
			name string
			// setup writes the --config file's directory and returns the file's
			// content (its binds), where the file lies on the host, where the
			// sandbox sees it, and the run's extra environment.
			setup func(p *project) (content, file, inSandbox string, env []string)
		}{
			{"rw_binds", func(p *project) (string, string, string, []string) {
				p.mkdir("shared")
				return "[sandbox]\nrw_binds = [\"" + p.path("shared") + "\"]\n", p.path("shared/dev.toml"), p.path("shared/dev.toml"), nil
			}},
			{"host_mounts", func(p *project) (string, string, string, []string) {
				p.mkdir("shared")
				return "[sandbox]\nhost_mounts = [\"" + p.path("shared") + ":/mnt/shared\"]\n", p.path("shared/dev.toml"), "/mnt/shared/dev.toml", nil
			}},
			{"tool state", func(p *project) (string, string, string, []string) {
				// Claude Code's sessions of this project are shared read-write.
				dir := "claude/projects/" + claudeKey(p.dir)
				p.mkdir(dir)
				// Inside, the directory is where CLAUDE_CONFIG_DIR says: below the
				// containers' home when that is elsewhere (as on a Mac).
				return "", p.path(dir + "/dev.toml"), "\"$CLAUDE_CONFIG_DIR\"/projects/" + claudeKey(p.dir) + "/dev.toml", []string{"CLAUDE_CONFIG_DIR=" + p.path("claude")}
			}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				p := newProject(t)
				t.Cleanup(func() { os.Remove(it.home + "/.config/devsandbox/trusted.toml") })
				p.write("outside/secret", "HOSTSECRET\n")
				content, file, inSandbox, env := c.setup(p)
				rel, _ := filepath.Rel(p.root, file)
				p.writeConfig(iso, rel, content)
				// The plant: the bind that made the file writable goes, a host directory
				// comes in.
				p.writeConfig(iso, "proj/planted.toml", "[sandbox]\nro_binds = [\""+p.path("outside")+"\"]\n")
				sandbox := func(script string) result {
					return run(t, p.dir, env, "", "--isolator="+iso, "--config", file, "--", "/bin/sh", "-c", script)
				}
				plant := "cat planted.toml > " + inSandbox
				r := sandbox(plant)
				if r.code == 125 {
					if !strings.Contains(r.stderr, file) || !strings.Contains(r.stderr, "devsandbox config trust "+file) {
						t.Errorf("an untrusted --config file the sandbox can write: the refusal names neither it nor the fix:\n%s", r)
					}
					sameAsRun(t, r, run(t, p.dir, env, "", "config", "validate", file), 125, "config validate")
					sameAsRun(t, r, run(t, p.dir, env, "", "--isolator="+iso, "--config", file, "doctor"), 1, "doctor")
					if r := run(t, p.dir, env, "", "config", "trust", file); r.code != 0 {
						t.Fatalf("config trust %s:\n%s", file, r)
					}
					r = sandbox(plant)
				} else {
					t.Errorf("an untrusted --config file the sandbox can write applied (want 125 naming it and the fix):\n%s", r)
				}
				if r.code != 0 {
					t.Fatalf("the plant run:\n%s", r)
				}
				r = sandbox("cat " + p.path("outside/secret"))
				if strings.Contains(r.stdout, "HOSTSECRET") || r.code != 125 || !strings.Contains(r.stderr, "devsandbox config trust "+file) {
					t.Errorf("the --config file the sandbox rewrote: want the run stopped (125) naming the fix:\n%s", r)
				}
			})
		}
	})
}

// TestConfigFileInOtherProject: a --config file in another project that devsandbox
// has run (its state records the project's directory) is one that project's sandbox
// can write. Rewritten there, it must not apply silently to a run of this project.
func TestConfigFileInOtherProject(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		t.Cleanup(func() { os.Remove(it.home + "/.config/devsandbox/trusted.toml") })
		other := p.path("other")
		p.mkdir("other/.git")
		t.Cleanup(func() { p.forget(other) })
		p.write("outside/secret", "HOSTSECRET\n")
		file := p.writeConfig(iso, "other/dev.toml", "")
		p.writeConfig(iso, "other/planted.toml", "[sandbox]\nro_binds = [\""+p.path("outside")+"\"]\n")
		// The other project's sandbox rewrites the file.
		if r := run(t, other, nil, "", "--isolator="+iso, "--", "/bin/sh", "-c", "cat planted.toml > dev.toml"); r.code != 0 {
			t.Fatalf("the other project's run:\n%s", r)
		}
		r := p.sandbox(iso, []string{"--config", file}, "cat "+p.path("outside/secret"))
		if strings.Contains(r.stdout, "HOSTSECRET") || r.code != 125 || !strings.Contains(r.stderr, "devsandbox config trust "+file) {
			t.Fatalf("a --config file in another project its sandbox rewrote: want the run stopped (125) naming the fix:\n%s", r)
		}
		if !strings.Contains(r.stderr, other) {
			t.Errorf("the refusal does not say the file lies in the other project %s:\n%s", other, r)
		}
	})
}

// TestUserConfigNotWritableThroughBind: the user config file (and the trust records
// beside it) stay out of the sandbox's reach when a read-write bind holds them: it
// cannot rewrite the layer every later run reads.
func TestUserConfigNotWritableThroughBind(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		user := filepath.Join(it.home, ".config/devsandbox/config.toml")
		before, err := os.ReadFile(user)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if after, _ := os.ReadFile(user); string(after) != string(before) {
				_ = os.WriteFile(user, before, 0o600)
			}
		})
		conf := filepath.Join(it.home, ".config")
		r := p.sandbox(iso, []string{"--mount", conf}, `printf '\n[sandbox]\nro_binds = ["/"]\n' >> `+user+` 2>/dev/null && echo WROTE; printf x > `+conf+`/devsandbox/trusted.toml 2>/dev/null && echo WROTE; true`)
		if r.code != 0 {
			t.Fatalf("run:\n%s", r)
		}
		if after, _ := os.ReadFile(user); string(after) != string(before) {
			t.Errorf("the sandbox rewrote the user config through a bind of %s:\n%s", conf, after)
		}
		if _, err := os.Stat(conf + "/devsandbox/trusted.toml"); err == nil {
			os.Remove(conf + "/devsandbox/trusted.toml")
			t.Errorf("the sandbox wrote the trust records through a bind of %s", conf)
		}
	})
}

// sameAsRun fails unless got (config validate, doctor) exited code and said the
// refusal the run said, word for word.
func sameAsRun(t *testing.T, runR, got result, code int, what string) {
	t.Helper()
	refusal := strings.TrimSpace(runR.stderr[strings.Index(runR.stderr, "/"):])
	if got.code != code || !strings.Contains(got.stderr+got.stdout, refusal) {
		t.Errorf("%s does not say what the run said (%q), exit %d:\n%s", what, refusal, code, got)
	}
}
