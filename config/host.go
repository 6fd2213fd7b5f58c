package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/devsandbox/devsandbox/internal/rawfile"
)

// HostFromEnviron builds the Host snapshot from an environment in os.Environ form.
// A nil environ means os.Environ(); a negative uid or gid means the process's own.
// It fails when HOME is unset or not absolute. When neither USER nor LOGNAME is set,
// the user name comes from /etc/passwd, else it is the uid as a number.
func HostFromEnviron(environ []string, uid, gid int) (Host, error) {
	if environ == nil {
		environ = os.Environ()
	}
	if uid < 0 {
		uid = os.Getuid()
	}
	if gid < 0 {
		gid = os.Getgid()
	}
	// rawfile.ReadFile, not os.ReadFile: this is often the first file a launch reads, and
	// os.File would set up the runtime's poller for it.
	return newHost(environ, uid, gid, func() ([]byte, error) { return rawfile.ReadFile("/etc/passwd") })
}

// newHost is HostFromEnviron with the passwd reader injected.
func newHost(environ []string, uid, gid int, readPasswd func() ([]byte, error)) (Host, error) {
	vars := make(map[string]string, len(environ))
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if _, dup := vars[name]; !dup { // the first entry wins, as with os.Getenv
			vars[name] = value
		}
	}
	h := Host{Vars: vars, UID: uid, GID: gid}

	home := vars["HOME"]
	if home == "" || !filepath.IsAbs(home) {
		return Host{}, &Error{Source: "env HOME", Err: invalidf("HOME must be an absolute path, got %q", home)}
	}
	h.Home = filepath.Clean(home)

	for _, name := range []string{vars["USER"], vars["LOGNAME"]} {
		if plainName(name) {
			h.User = name
			break
		}
	}
	if h.User == "" {
		if data, err := readPasswd(); err == nil {
			h.User = passwdName(data, uid)
		}
	}
	if h.User == "" {
		h.User = strconv.Itoa(uid)
	}

	h.ConfigHome = xdgDir(vars["XDG_CONFIG_HOME"], h.Home, ".config")
	h.DataHome = xdgDir(vars["XDG_DATA_HOME"], h.Home, ".local/share")
	h.StateHome = xdgDir(vars["XDG_STATE_HOME"], h.Home, ".local/state")
	h.CacheHome = xdgDir(vars["XDG_CACHE_HOME"], h.Home, ".cache")
	h.RuntimeDir = xdgDir(vars["XDG_RUNTIME_DIR"], "", "")
	return h, nil
}

// xdgDir returns value when it is absolute (the XDG spec says to ignore relative
// values), else home/def, or "" when there is no default.
func xdgDir(value, home, def string) string {
	if filepath.IsAbs(value) {
		return filepath.Clean(value)
	}
	if def == "" {
		return ""
	}
	return filepath.Join(home, def)
}

// plainName reports whether s can serve as a user name in a path such as /home/<user>.
func plainName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\x00")
}

// passwdName returns the name of the first /etc/passwd entry with the given uid, or "".
func passwdName(data []byte, uid int) string {
	want := strconv.Itoa(uid)
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte{'\n'})
		// name:password:uid:gid:gecos:home:shell
		fields := bytes.SplitN(line, []byte{':'}, 4)
		if len(fields) < 4 || string(fields[2]) != want {
			continue
		}
		if name := string(fields[0]); plainName(name) && name[0] != '#' && name[0] != '+' && name[0] != '-' {
			return name
		}
	}
	return ""
}
