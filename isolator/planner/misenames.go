package planner

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/devsandbox/devsandbox/internal/rawfile"
	"github.com/devsandbox/devsandbox/isolator"
)

// miseNameVars are the host variables that change which project files mise reads as
// configuration, each with how its value lists names. mise looks each name up in
// the directory it runs in and every parent, joined as written (a name may hold a
// directory or a glob), and takes a tool-versions file without asking for trust.
var miseNameVars = []struct {
	name string
	sep  string // "" for a single name
}{
	{"MISE_DEFAULT_CONFIG_FILENAME", ""},
	{"MISE_OVERRIDE_CONFIG_FILENAMES", ":"},
	{"MISE_DEFAULT_TOOL_VERSIONS_FILENAME", ""},
	{"MISE_OVERRIDE_TOOL_VERSIONS_FILENAMES", ":"}, // "none" reads none
}

// miseFileVars are host variables naming one file or directory mise loads as its
// own (global or system) configuration, trusted without asking: absolute, so they
// matter only when the project holds them (a dotfiles repository).
var miseFileVars = []string{"MISE_GLOBAL_CONFIG_FILE", "MISE_CONFIG_FILE", "MISE_SYSTEM_CONFIG_FILE", "MISE_CONFIG_DIR"}

// miseEnvVars name mise's profiles (comma-separated); each profile adds the
// mise.<profile>.toml family of names (see miseProfileNames).
var miseEnvVars = []string{"MISE_ENV", "MISE_PROFILE", "MISE_ENVIRONMENT"}

// miseProfileNames are the names mise reads for the profile env, in the shape
// hostExecuted's patterns cover for a plain profile name.
func miseProfileNames(env string) []string {
	var out []string
	for _, local := range []string{"", ".local"} {
		for _, f := range []string{".config/mise/config.%s%s.toml", ".config/mise.%s%s.toml", "mise/config.%s%s.toml",
			"mise.%s%s.toml", ".mise/config.%s%s.toml", ".mise.%s%s.toml"} {
			out = append(out, fmt.Sprintf(f, env, local))
		}
	}
	return out
}

// hostExecutedNames returns hostExecuted with the project-relative names the host
// environment vars make mise read (see miseNameVars) or a .miserc.toml lists, and
// warnings for names set there that cannot be protected. A name is kept when it is relative and stays in
// the project once cleaned, or absolute and inside dir; a glob is kept only in its
// last element (path.Match syntax). A name already covered by hostExecuted, and an
// absolute one outside dir (not the project's to protect), is dropped silently.
//
// miserc are the names the .miserc.toml files add (readMiserc), under their path.
func hostExecutedNames(vars map[string]string, dir string, miserc []misercNames) ([]string, []string) {
	out := append([]string(nil), hostExecuted...)
	var warns []string
	seen := map[string]bool{}
	add := func(v, raw string) {
		rel := raw
		if filepath.IsAbs(rel) {
			p := filepath.Clean(rel)
			if !isolator.Within(p, dir) || p == dir {
				return
			}
			rel, _ = filepath.Rel(dir, p)
		}
		rel = filepath.Clean(rel)
		switch {
		case rel == "." || rel == ".." || strings.HasPrefix(rel, "../"):
			warns = append(warns, fmt.Sprintf("%s names %q, which mise reads outside the project directory it runs in: devsandbox cannot keep the sandbox from writing it; use a name inside the project", v, raw))
			return
		case isPattern(filepath.Dir(rel)):
			warns = append(warns, fmt.Sprintf("%s names %q, a glob in a directory name: devsandbox protects globs only in the last element of a name, so the sandbox can create files it matches; use a plain directory", v, raw))
			return
		case seen[rel] || coveredByHostExecuted(rel):
			return
		}
		seen[rel] = true
		out = append(out, rel)
	}
	for _, v := range miseNameVars {
		val, ok := vars[v.name]
		if !ok || val == "" || v.name == "MISE_OVERRIDE_TOOL_VERSIONS_FILENAMES" && val == "none" {
			continue
		}
		names := []string{val}
		if v.sep != "" {
			names = strings.Split(val, v.sep)
		}
		for _, n := range names {
			if n != "" {
				add(v.name, n)
			}
		}
	}
	for _, v := range miseEnvVars {
		for _, env := range strings.Split(vars[v], ",") {
			if env == "" {
				continue
			}
			for _, n := range miseProfileNames(env) {
				add(v, n)
			}
		}
	}
	for _, v := range miseFileVars {
		if p := vars[v]; filepath.IsAbs(p) {
			add(v, p)
		}
	}
	for _, rc := range miserc {
		for _, n := range rc.names {
			add(rc.path, n)
		}
	}
	sort.Strings(out[len(hostExecuted):])
	return out, warns
}

// misercNames are the names one .miserc.toml adds (see readMiserc).
type misercNames struct {
	path  string
	names []string
}

// misercFile is what of a .miserc.toml chooses file names: mise reads it, untrusted,
// before any config file.
type misercFile struct {
	Env                           any      `toml:"env"` // a list, or one name
	OverrideConfigFilenames       []string `toml:"override_config_filenames"`
	OverrideToolVersionsFilenames []string `toml:"override_tool_versions_filenames"`
}

// misercPaths are the .miserc.toml files mise reads for a directory of the project
// dir: the project's own and its parents' up to home (.miserc.toml, and
// .config/miserc.toml below home), then the global and system ones.
func misercPaths(vars map[string]string, dir, home, configHome string) []string {
	var out []string
	for d := dir; ; d = filepath.Dir(d) {
		out = append(out, filepath.Join(d, ".miserc.toml"))
		if d == home || d == "/" {
			break
		}
		out = append(out, filepath.Join(d, ".config", "miserc.toml"))
	}
	global := filepath.Join(configHome, "mise")
	if v := vars["MISE_CONFIG_DIR"]; filepath.IsAbs(v) {
		global = v
	}
	system := "/etc/mise"
	if v := vars["MISE_SYSTEM_CONFIG_DIR"]; filepath.IsAbs(v) {
		system = v
	}
	return append(out, filepath.Join(global, "miserc.toml"), filepath.Join(system, "miserc.toml"))
}

// readMiserc returns the names each of the miserc files that exists adds: its
// override names and its profiles' names, and warnings for one devsandbox cannot
// read as mise would (a template, which mise renders first; not TOML).
func readMiserc(read func(string) ([]byte, error), paths []string) ([]misercNames, []string) {
	var out []misercNames
	var warns []string
	for _, p := range paths {
		b, err := read(p)
		if errors.Is(err, rawfile.ErrTooLarge) {
			warns = append(warns, fmt.Sprintf("%s is larger than devsandbox reads (%v): the file names it makes mise read are not protected; a sandboxed run may have left it, check it", p, err))
			continue
		}
		if err != nil {
			continue // absent, unreadable or not a regular file (a FIFO): mise reads nothing there either
		}
		var f misercFile
		if strings.Contains(string(b), "{{") || strings.Contains(string(b), "{%") {
			warns = append(warns, fmt.Sprintf("%s is a template: devsandbox cannot tell which file names it makes mise read, so the sandbox may write those files; write the names out", p))
			continue
		}
		if err := toml.Unmarshal(b, &f); err != nil {
			warns = append(warns, fmt.Sprintf("%s is not TOML devsandbox can read (%v): the file names it makes mise read are not protected; fix it", p, err))
			continue
		}
		rc := misercNames{path: p}
		rc.names = append(rc.names, f.OverrideConfigFilenames...)
		rc.names = append(rc.names, f.OverrideToolVersionsFilenames...)
		var envs []string
		switch e := f.Env.(type) {
		case string:
			envs = strings.Split(e, ",")
		case []any:
			for _, x := range e {
				if s, ok := x.(string); ok {
					envs = append(envs, s)
				}
			}
		}
		for _, env := range envs {
			if env != "" {
				rc.names = append(rc.names, miseProfileNames(env)...)
			}
		}
		out = append(out, rc)
	}
	return out, warns
}

// coveredByHostExecuted reports whether the fixed list already protects rel: the
// same name, a name a pattern of it matches, or a name below one of its directories.
func coveredByHostExecuted(rel string) bool {
	for _, h := range hostExecuted {
		if h == rel || isolator.Within("/"+rel, "/"+h) {
			return true
		}
		if isPattern(h) && !isPattern(rel) && path.Dir(h) == path.Dir(rel) {
			if ok, _ := path.Match(path.Base(h), path.Base(rel)); ok {
				return true
			}
		}
	}
	return false
}
