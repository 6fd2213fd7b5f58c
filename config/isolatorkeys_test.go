package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// DOCKER_HOST is judged as docker.host is, when the docker isolator is chosen and
// docker.host leaves the address to it: a run refuses it at load, naming the
// variable and the fix. Under other isolators, or below docker.host, it is not read.
func TestDockerHostFromEnvironment(t *testing.T) {
	docker, bwrap, auto := "docker", "bwrap", "auto"
	const ssh = `env DOCKER_HOST: "ssh://me@build": devsandbox does not speak to an engine over ssh; forward its socket (ssh -nNT -L /ABSOLUTE/SOCKET:/var/run/docker.sock HOST) and set DOCKER_HOST=unix:///ABSOLUTE/SOCKET`
	cases := []struct {
		name     string
		env      []string
		user     string
		isolator *string
		want     string // "" when accepted
	}{
		{"ssh, docker by flag", []string{"DOCKER_HOST=ssh://me@build"}, "", &docker, ssh},
		{"ssh, docker by DEVSANDBOX_ISOLATOR", []string{"DOCKER_HOST=ssh://me@build", "DEVSANDBOX_ISOLATOR=docker"}, "", nil, ssh},
		{"ssh, docker by the user file", []string{"DOCKER_HOST=ssh://me@build"}, "isolator = \"docker\"\n", nil, ssh},
		{"a scheme no client dials", []string{"DOCKER_HOST=ftp://x"}, "", &docker, `env DOCKER_HOST: "ftp://x" is not an engine address: use unix:///PATH or tcp://HOST:PORT`},
		{"tcp without a port", []string{"DOCKER_HOST=tcp://x"}, "", &docker, `env DOCKER_HOST: "tcp://x": a tcp:// address needs a host and a port (tcp://HOST:2376)`},
		{"unix socket", []string{"DOCKER_HOST=unix:///run/user/1000/docker.sock"}, "", &docker, ""},
		{"docker.host wins", []string{"DOCKER_HOST=ssh://me@build"}, "[docker]\nhost = \"unix:///var/run/docker.sock\"\n", &docker, ""},
		{"bwrap does not read it", []string{"DOCKER_HOST=ssh://me@build"}, "", &bwrap, ""},
		{"auto decides at launch", []string{"DOCKER_HOST=ssh://me@build"}, "", &auto, ""},
		{"empty is unset", []string{"DOCKER_HOST="}, "", &docker, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home, env := testHome(t, tc.env...)
			if tc.user != "" {
				writeUserFile(t, home, tc.user)
			}
			_, _, err := Load(LoadOptions{Environ: env, Flags: Flags{Isolator: tc.isolator}, UID: 1000, GID: 1000})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Load: %v", err)
			case tc.want == "":
				return
			case err == nil:
				t.Fatalf("Load accepts it; want %s", tc.want)
			}
			if err.Error() != tc.want || !errors.Is(err, ErrInvalid) || asConfigError(t, err).Source != "env DOCKER_HOST" {
				t.Errorf("Load:\n got %v\nwant %s", err, tc.want)
			}
		})
	}
}

// `config validate FILE` reads DOCKER_HOST as a run with --config FILE does.
func TestDockerHostFromEnvironmentLoadFile(t *testing.T) {
	home, env := testHome(t, "DOCKER_HOST=ssh://me@build")
	host, err := HostFromEnviron(env, 1000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, filepath.Join(home, "c.toml"), "isolator = \"docker\"\n")
	if _, _, err := LoadFile(file, host); err == nil || asConfigError(t, err).Source != "env DOCKER_HOST" {
		t.Errorf("LoadFile: %v, want the DOCKER_HOST error", err)
	}
	bw := writeFile(t, filepath.Join(home, "b.toml"), "isolator = \"bwrap\"\n")
	if _, _, err := LoadFile(bw, host); err != nil {
		t.Errorf("LoadFile (bwrap): %v", err)
	}
}

// docker.keep_container cannot hold with the krun isolator: the layer that brings the
// two together is refused, naming its own key and where the other came from.
func TestKeepContainerWithKrun(t *testing.T) {
	krun, docker := "krun", "docker"
	keep := true
	cases := []struct {
		name     string
		user     string
		env      []string
		isolator *string
		keep     *bool
		want     string // "" when accepted
	}{
		{"both in the user file", "isolator = \"krun\"\n[docker]\nkeep_container = true\n", nil, nil, nil,
			"USER:3: docker.keep_container: docker.keep_container (from USER) is not possible with the krun isolator (from USER): a libkrun microVM runs exactly one command and cannot be exec'd into; run without it (docker.keep_container = false, --keep-container=false), or use --isolator=docker"},
		{"--keep-container with krun from the file", "isolator = \"krun\"\n", nil, nil, &keep,
			"flag --keep-container: docker.keep_container (from flag --keep-container) is not possible with the krun isolator (from USER): a libkrun microVM runs exactly one command and cannot be exec'd into; run without it (docker.keep_container = false, --keep-container=false), or use --isolator=docker"},
		{"--isolator=krun with keep_container from the file", "[docker]\nkeep_container = true\n", nil, &krun, nil,
			"flag --isolator: docker.keep_container (from USER) is not possible with the krun isolator (from flag --isolator): a libkrun microVM runs exactly one command and cannot be exec'd into; run without it (docker.keep_container = false, --keep-container=false), or use --isolator=docker"},
		{"DEVSANDBOX_ISOLATOR=krun", "[docker]\nkeep_container = true\n", []string{"DEVSANDBOX_ISOLATOR=krun"}, nil, nil,
			"env DEVSANDBOX_ISOLATOR: docker.keep_container (from USER) is not possible with the krun isolator (from env DEVSANDBOX_ISOLATOR): a libkrun microVM runs exactly one command and cannot be exec'd into; run without it (docker.keep_container = false, --keep-container=false), or use --isolator=docker"},
		{"docker keeps", "[docker]\nkeep_container = true\n", nil, &docker, nil, ""},
		{"krun without keeping", "isolator = \"krun\"\n[docker]\nkeep_container = false\n", nil, nil, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home, env := testHome(t, tc.env...)
			user := writeUserFile(t, home, tc.user)
			_, _, err := Load(LoadOptions{Environ: env, Flags: Flags{Isolator: tc.isolator, KeepContainer: tc.keep}, UID: 1000, GID: 1000})
			want := strings.ReplaceAll(tc.want, "USER", user)
			switch {
			case want == "" && err != nil:
				t.Fatalf("Load: %v", err)
			case want == "":
				return
			case err == nil:
				t.Fatalf("Load accepts it; want %s", want)
			}
			if err.Error() != want || !errors.Is(err, ErrInvalid) {
				t.Errorf("Load:\n got %v\nwant %s", err, want)
			}
		})
	}
}

// `config trust` refuses a project file that moves to krun while the user keeps
// containers, with the message a run gives, and records nothing.
func TestTrustRefusesKrunWithKeepContainer(t *testing.T) {
	home, env := testHome(t)
	user := writeUserFile(t, home, "[docker]\nkeep_container = true\n")
	host, err := HostFromEnviron(env, 1000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(home, "proj")
	file := writeFile(t, filepath.Join(proj, ProjectFileName), "isolator = \"krun\"\n")
	_, err = Trust(host, file, trustTime)
	want := file + ":1: isolator: docker.keep_container (from " + user + ") is not possible with the krun isolator (from " + file + "): a libkrun microVM runs exactly one command and cannot be exec'd into; run without it (docker.keep_container = false, --keep-container=false), or use --isolator=docker"
	if err == nil || err.Error() != want {
		t.Fatalf("Trust: %v\nwant %s", err, want)
	}
	if st, err := CheckTrust(host, file); err != nil || st != Untrusted {
		t.Errorf("after a refused Trust: %v, %v; want untrusted", st, err)
	}
}
