package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
)

// Outside a project doctor judges the engine a run would use: the user file's
// docker.host, else DOCKER_HOST, else the docker context, refused in a launch's words
// (the address part of the docker rows is the stub's QuickCheck, which makes no
// request). A user file that does not load is warned and makes doctor's verdict a
// failure, and the rows still see the environment's address.
func TestDoctorConfigOutsideAProject(t *testing.T) {
	refused := `docker context "remote": "ssh://me@build": devsandbox does not speak to an engine over ssh; forward its socket (ssh -nNT -L /ABSOLUTE/SOCKET:/var/run/docker.sock HOST) and set docker.host = "unix:///ABSOLUTE/SOCKET"`
	addressFix := "fix DOCKER_HOST or the docker context (docker context use default), or set docker.host"
	dockerDir := t.TempDir()
	writeDockerContext(t, dockerDir, "remote", "ssh://me@build")
	sshContext := []string{"DOCKER_CONFIG=" + dockerDir, "DOCKER_CONTEXT=remote"}
	cases := []struct {
		name, user string // user: the user config file's content ("": none)
		env        []string
		isolator   string
		broken     bool
		warning    string // after the not-a-project warning
		engine     isolator.Status
	}{
		{name: "the user file's docker.host", user: "isolator = \"docker\"\n[docker]\nhost = \"unix:///nonexistent/docker.sock\"\n",
			isolator: "docker",
			engine:   isolator.Status{State: isolator.Unavailable, Reason: "no docker engine at unix:///nonexistent/docker.sock (docker.host)", Fix: dockerStartHint}},
		{name: "DOCKER_HOST", env: []string{"DOCKER_HOST=unix:///nonexistent/env.sock"}, isolator: "auto",
			engine: isolator.Status{State: isolator.Unavailable, Reason: "no docker engine at unix:///nonexistent/env.sock (DOCKER_HOST)", Fix: dockerStartHint}},
		{name: "an ssh docker context under auto", env: sshContext, isolator: "auto",
			engine: isolator.Status{State: isolator.Unavailable, Reason: refused, Fix: addressFix}},
		{name: "an ssh docker context with isolator = docker", user: "isolator = \"docker\"\n", env: sshContext,
			isolator: "auto", broken: true, // the defaults: the user file does not load
			warning: "devsandbox: warning: " + refused + "\n",
			engine:  isolator.Status{State: isolator.Unavailable, Reason: refused, Fix: addressFix}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			t.Chdir(home)
			env := append([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "PATH=" + os.Getenv("PATH")}, c.env...)
			if c.user != "" {
				if err := os.MkdirAll(filepath.Join(home, ".config", "devsandbox"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(home, ".config", "devsandbox", "config.toml"), []byte(c.user), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var errb bytes.Buffer
			a := &app{stdout: &bytes.Buffer{}, stderr: &errb, environ: env}
			cfg, keys, planned, broken, _, err := a.doctorConfig(config.Flags{})
			if err != nil {
				t.Fatal(err)
			}
			notProject := "devsandbox: warning: unusable project directory: " + home + " is your home directory; run devsandbox from a project directory (or a subdirectory of one)\n"
			if errb.String() != notProject+c.warning {
				t.Errorf("warnings:\n%s\nwant\n%s", errb.String(), notProject+c.warning)
			}
			if cfg.Isolator != c.isolator || broken != c.broken || keys != nil || planned != nil {
				t.Errorf("isolator %q, broken %v, keys %v, plan %v; want %q, %v, none, none", cfg.Isolator, broken, keys, planned != nil, c.isolator, c.broken)
			}
			s := dockerStub(cfg, nil)
			s.Path = "/bin/true" // stands for devsandbox-docker: QuickCheck runs no program
			if st := s.QuickCheck(); st != c.engine {
				t.Errorf("the docker address:\n got %+v\nwant %+v", st, c.engine)
			}
		})
	}
}

const dockerStartHint = "start Docker, or set docker.host / DOCKER_HOST"
