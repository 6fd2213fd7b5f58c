package planner

import (
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

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
// environment vars make mise read (see miseNameVars), and warnings for names set
// there that cannot be protected. A name is kept when it is relative and stays in
// the project once cleaned, or absolute and inside dir; a glob is kept only in its
// last element (path.Match syntax). A name already covered by hostExecuted, and an
// absolute one outside dir (not the project's to protect), is dropped silently.
func hostExecutedNames(vars map[string]string, dir string) ([]string, []string) {
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
	sort.Strings(out[len(hostExecuted):])
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
