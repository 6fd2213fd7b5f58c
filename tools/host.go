package tools

import (
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
)

// Host is the snapshot of the host that detection and bindings read. Functions are
// injected so the registry is table-testable; the caller probes the real host. A nil
// function reads as "nothing there".
type Host struct {
	Home string
	Env  map[string]string
	// Exists reports whether a path exists (without following a final symlink).
	Exists func(path string) bool
	// LookPath returns the path of the named executable on the host PATH, as found in
	// PATH (not resolved). The path may be "" when the command exists but could not be
	// located.
	LookPath func(name string) (string, bool)
	// EvalSymlinks resolves every symlink in a path.
	EvalSymlinks func(path string) (string, error)
	ReadFile     func(path string) ([]byte, error)
	// ReadHead returns at most the first n bytes of a regular file, without following
	// a final symlink or blocking on a FIFO (files a sandbox may have planted).
	ReadHead func(path string, n int) ([]byte, error)
	// ReadDir returns the sorted names in a directory.
	ReadDir func(path string) ([]string, error)
	// Project is the project directory (per-project state of a tool is keyed by it).
	Project string
	// Writable, when set, lists the host paths besides Project that the sandbox can
	// write (its read-write binds, the tools' shared state, devsandbox's own data):
	// a tool's configuration file inside one is not followed (Key.Routes). It is
	// called only when such a file is about to be read.
	Writable func() []WritablePath
	// Command is the command the run starts, as devsandbox's own command line gives
	// it (never anything the sandbox wrote); nil outside a run. A tool whose key its
	// command line can move (Codex's -c flags) reads it.
	Command []string
	// ProxyCommand, when set, is how ssh reaches hosts from this sandbox: through the
	// egress proxy (proxy and allowlist modes), where no direct route exists.
	ProxyCommand string
	// Memo, when set (NewMemo), keeps for the life of this snapshot what more than
	// one of a tool's functions works out from the host (Claude Code's session
	// check, which both its Bindings and its Warnings need). Nil: each call reads
	// the host again.
	Memo *Memo
}

// Memo holds results worked out from one host snapshot (Host.Memo). It is safe for
// concurrent use.
type Memo struct {
	mu     sync.Mutex
	claude map[string]claudeVerdict
}

// NewMemo returns an empty Memo.
func NewMemo() *Memo { return &Memo{claude: map[string]claudeVerdict{}} }

func (h Host) exists(p string) bool {
	return h.Exists != nil && h.Exists(p)
}

func (h Host) onPath(name string) bool {
	_, ok := h.lookPath(name)
	return ok
}

func (h Host) lookPath(name string) (string, bool) {
	if h.LookPath == nil {
		return "", false
	}
	return h.LookPath(name)
}

// realPath resolves p, or returns it unchanged when it cannot be resolved.
func (h Host) realPath(p string) string {
	if h.EvalSymlinks == nil {
		return p
	}
	if r, err := h.EvalSymlinks(p); err == nil && filepath.IsAbs(r) {
		return filepath.Clean(r)
	}
	return p
}

// rel returns p relative to the home, or "" when p is not strictly below it.
func (h Host) rel(p string) string {
	if h.Home == "" || !strings.HasPrefix(p, h.Home+"/") {
		return ""
	}
	return strings.TrimPrefix(p, h.Home+"/")
}

// xdg returns the host directory of an XDG base variable (XDG_CONFIG_HOME, ...), or
// home/def when it is unset, not absolute, or lies in a credential path.
func (h Host) xdg(name, def string) string {
	if v := h.Env[name]; filepath.IsAbs(v) && !h.inCredentials(filepath.Clean(v)) {
		return filepath.Clean(v)
	}
	return h.Home + "/" + def
}

// place is a host location and where it appears in the sandbox: at rel below the
// sandbox home, or else at the same absolute path.
type place struct {
	src string
	rel string
}

// at places the host path p: home-relative when below the home.
func (h Host) at(p string) place {
	return place{src: p, rel: h.rel(p)}
}

// home places home/rel at rel.
func (h Host) home(rel string) place {
	return place{src: h.Home + "/" + rel, rel: rel}
}

// xdgPlace places sub of an XDG base directory at its default location in the sandbox
// home, where the tool looks for it since XDG_* variables are not passed in.
func (h Host) xdgPlace(name, def, sub string) place {
	return place{src: filepath.Join(h.xdg(name, def), sub), rel: def + "/" + sub}
}

// config places sub of the XDG config directory (~/.config).
func (h Host) config(sub string) place { return h.xdgPlace("XDG_CONFIG_HOME", ".config", sub) }

// data places sub of the XDG data directory (~/.local/share).
func (h Host) data(sub string) place { return h.xdgPlace("XDG_DATA_HOME", ".local/share", sub) }

// usable places the host path p unless it is not absolute or binding it would expose
// credentials or the whole home.
func (h Host) usable(p string) (place, bool) {
	if !filepath.IsAbs(p) {
		return place{}, false
	}
	p = filepath.Clean(p)
	if h.exposesCredentials(p) {
		return place{}, false
	}
	return h.at(p), true
}

// envPlace places the location named by the tool's variable when it is usable (the
// variable is passed, so the tool looks there), else def.
func (h Host) envPlace(name string, def place) place {
	if p, ok := h.usable(h.Env[name]); ok {
		return p
	}
	return def
}

func (p place) join(sub string) place {
	q := place{src: filepath.Join(p.src, sub)}
	if p.rel != "" {
		q.rel = p.rel + "/" + sub
	}
	return q
}

func (p place) bind(m Mode) Binding {
	b := Binding{Source: p.src, Mode: m, Optional: true}
	if p.rel != "" {
		b.HomeRelativeDest = p.rel
	} else {
		b.Dest = p.src
	}
	return b
}

// credentialPaths are home-relative paths holding credentials that no computed binding
// may expose: bindings derived from host data (PATH, symlinks, variables) skip a path
// that is, lies in or holds one of them.
var credentialPaths = []string{
	".ssh", ".aws", ".gnupg", ".docker", ".kube", ".azure", ".config/gcloud",
	".netrc", ".npmrc", ".pypirc", ".git-credentials", ".config/git/credentials",
	".cargo/credentials", ".cargo/credentials.toml", ".config/gh/hosts.yml",
	".local/share/keyrings", ".password-store", ".vault-token",
}

// CredentialPaths returns the absolute credential paths below home that no binding may
// expose, computed or configured.
func CredentialPaths(home string) []string {
	out := make([]string, len(credentialPaths))
	for i, c := range credentialPaths {
		out[i] = home + "/" + c
	}
	return out
}

// exposesCredentials reports whether binding the absolute path p would expose a
// credential path (p is one, lies in one or holds one), or the whole home.
func (h Host) exposesCredentials(p string) bool {
	if p == "/" || within(h.Home, p) || h.inCredentials(p) {
		return true
	}
	r := h.rel(p)
	for _, c := range credentialPaths {
		if r != "" && strings.HasPrefix(c, r+"/") {
			return true
		}
	}
	return false
}

// inCredentials reports whether the absolute path p is a credential path or lies in one.
func (h Host) inCredentials(p string) bool {
	r := h.rel(p)
	for _, c := range credentialPaths {
		if r != "" && (r == c || strings.HasPrefix(r, c+"/")) {
			return true
		}
	}
	return false
}

// FindExecutable returns the first executable regular file called name in the
// colon-separated directories of pathList, read through stat, or "" when there is
// none. Relative entries are ignored, as exec.LookPath does.
func FindExecutable(pathList, name string, stat func(string) (fs.FileInfo, error)) string {
	if name == "" || strings.Contains(name, "/") || stat == nil {
		return ""
	}
	for _, dir := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return ""
}
