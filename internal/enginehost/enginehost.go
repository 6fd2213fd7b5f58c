// Package enginehost judges a Docker engine address as devsandbox's Docker client would
// dial it. One check for every place an address comes from — docker.host, DOCKER_HOST, a
// docker CLI context — so each is refused alike, with the fix phrased for that place.
package enginehost

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Check returns nil when h is an address the Docker client dials as meant: unix://PATH
// (absolute) or tcp://HOST:PORT. Any other scheme would be dialled as plain TCP to the
// host part (ftp://x reaches x:80), and ssh:// needs the docker CLI's ssh helper, which
// devsandbox does not run. set phrases how the user sets the address where h came
// from, for the fix: `docker.host = "unix:///ABSOLUTE/SOCKET"`, `DOCKER_HOST=...`.
// The error's text is the problem and its fix, without the place's name.
func Check(h string, set func(addr string) string) error {
	scheme, addr, _ := strings.Cut(h, "://")
	switch scheme {
	case "unix":
		if !path.IsAbs(addr) {
			return fmt.Errorf("%q: a unix:// address needs an absolute socket path (unix:///var/run/docker.sock)", h)
		}
		return nil
	case "tcp":
		hostPort, _, _ := strings.Cut(addr, "/")
		if host, port, err := net.SplitHostPort(hostPort); err != nil || host == "" || !digits(port) {
			return fmt.Errorf("%q: a tcp:// address needs a host and a port (tcp://HOST:2376)", h)
		}
		return nil
	case "ssh":
		return fmt.Errorf("%q: devsandbox does not speak to an engine over ssh; forward its socket (ssh -nNT -L /ABSOLUTE/SOCKET:/var/run/docker.sock HOST) and set %s", h, set("unix:///ABSOLUTE/SOCKET"))
	}
	return fmt.Errorf("%q is not an engine address: use unix:///PATH or tcp://HOST:PORT", h)
}

// ConfigKey phrases the fix for docker.host in a config file.
func ConfigKey(addr string) string { return `docker.host = "` + addr + `"` }

// EnvVar phrases the fix for the DOCKER_HOST environment variable.
func EnvVar(addr string) string { return "DOCKER_HOST=" + addr }

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Context names the docker CLI context the docker CLI would use: DOCKER_CONTEXT, else
// currentContext in config.json of the docker config directory (DOCKER_CONFIG, else
// home/.docker); name is "" for the default one (none named, or "default"). dir is
// that config directory. env is the host environment.
func Context(env map[string]string, home string) (name, dir string) {
	dir = env["DOCKER_CONFIG"]
	if dir == "" {
		dir = filepath.Join(home, ".docker")
	}
	name = env["DOCKER_CONTEXT"]
	if name == "" {
		var cf struct{ CurrentContext string }
		if b, err := os.ReadFile(filepath.Join(dir, "config.json")); err == nil {
			_ = json.Unmarshal(b, &cf)
		}
		name = cf.CurrentContext
	}
	if name == "default" {
		name = ""
	}
	return name, dir
}

// ContextID is the directory name of context name's files (contexts/meta/ID,
// contexts/tls/ID), as the docker CLI makes it.
func ContextID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}

// ContextHost returns the docker endpoint of context name in the docker config
// directory dir, judged as Check judges docker.host (the fix names docker.host, the
// key that overrides a context). The error does not name the context; callers say
// `docker context "NAME": ` before it, so that a run, `config validate` and `doctor`
// word it alike.
func ContextHost(dir, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "contexts", "meta", ContextID(name), "meta.json"))
	if err != nil {
		return "", err
	}
	var meta struct {
		Endpoints map[string]struct{ Host string }
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return "", err
	}
	ep, ok := meta.Endpoints["docker"]
	if !ok || ep.Host == "" {
		return "", errors.New("the context has no docker endpoint")
	}
	if err := Check(ep.Host, ConfigKey); err != nil {
		return "", err
	}
	return ep.Host, nil
}
