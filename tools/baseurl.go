package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Endpoint is a base URL a tool may send a key to, as the tool reads it on the host.
type Endpoint struct {
	URL  string // the base URL; "" is the key's Host (the tool's default)
	From string // what set it, for people ("OPENAI_BASE_URL", "openai_base_url in /home/u/.codex/config.toml")
	// Optional marks an endpoint the tool uses only when told to (a provider of
	// Codex's, a profile): one that is not a usable URL is skipped with a warning,
	// where any other is an error.
	Optional bool
}

// EndpointsFrom names the configuration files a tool takes a key's endpoints from
// (Key.Endpoints); "" is none.
type EndpointsFrom string

// CodexConfig is Codex's config.toml and profile files (codexEndpoints).
const CodexConfig EndpointsFrom = "codex"

// Doc says what e follows, for the reference (docs/tools.md).
func (e EndpointsFrom) Doc() string {
	switch e {
	case CodexConfig:
		return "`openai_base_url` and each `[model_providers.*]` that sends it (`env_key`, `requires_openai_auth`) in `config.toml` and the profiles (`*.config.toml`) of `CODEX_HOME` (`~/.codex`), `/etc/codex/config.toml`, `/etc/codex/managed_config.toml` and the `-c` flags of a `codex` command"
	}
	return ""
}

// WritablePath is a host path the sandbox can write, and why (for people).
type WritablePath struct {
	Path, Why string
	// Prefix: every path whose name begins with Path (devsandbox-1000-, the socket
	// directories of a random name) and what lies below it.
	Prefix bool
	// UserBind: a bind the user configured (rw_binds, a read-write host_mounts entry,
	// bind_host_cache), in which the protected paths it holds (devsandbox's own
	// configuration, hide_paths, credential paths) are masked: what lies in one of
	// them is not the sandbox's to write through this bind.
	UserBind bool
}

// Holds reports whether p is w's path or lies below it.
func (w WritablePath) Holds(p string) bool {
	if w.Prefix {
		return strings.HasPrefix(p, w.Path)
	}
	return w.Path != "" && within(p, w.Path)
}

// settingMax bounds the bytes of a tool's configuration file read for its endpoints.
const settingMax = 1 << 20

// ErrSetting is the class of errors for a tool's configuration file that cannot be
// used to find where the tool sends a key: it is not a regular file the sandbox
// cannot write, is too large, does not parse, or holds a value of the wrong type.
var ErrSetting = errors.New("setting cannot be read")

// readTOML reads file, a tool's configuration file on h, as TOML; nil when it does
// not exist. A file that resolves into the project or into a path h.Writable lists
// is not read: the sandbox can write it, and what it says would then steer where the
// host sends secrets. It reads through h.ReadHead, so a FIFO cannot hang it and a
// planted final link is not followed (links are resolved first, through
// h.EvalSymlinks, and the real path is what is checked and read). Errors are
// ErrSetting, name the file, and never quote its content.
func readTOML(h Host, file string) (map[string]any, error) {
	fail := func(format string, a ...any) (map[string]any, error) {
		return nil, fmt.Errorf("%w: %s: %s", ErrSetting, file, fmt.Sprintf(format, a...))
	}
	if h.ReadHead == nil {
		return fail("the host's files cannot be read")
	}
	real := file
	if h.EvalSymlinks != nil {
		r, err := h.EvalSymlinks(file)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return fail("resolving its path: %v", err)
		}
		real = r
	}
	if h.Project != "" && within(real, h.Project) {
		return fail("it lies in the project (%s), where the sandbox can write it", real)
	}
	if h.Writable != nil {
		for _, w := range h.Writable() {
			if w.Holds(real) {
				return fail("it lies in %s (%s), where the sandbox can write it", w.Path, w.Why)
			}
		}
	}
	b, err := h.ReadHead(real, settingMax+1)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return fail("it cannot be read as a regular file (%v)", err)
	case len(b) > settingMax:
		return fail("it is larger than %d MiB", settingMax>>20)
	}
	doc := map[string]any{}
	if err := toml.Unmarshal(b, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return fail("it is not valid TOML (line %d, column %d)", row, col)
		}
		return fail("it is not valid TOML")
	}
	return doc, nil
}

// Routes returns the endpoints the tool may send k to on h other than its default
// (Host), and what set each: the tool's base-URL variable when set, else what its
// configuration files say (Key.Endpoints); none when nothing moves it. Warnings
// are for people: what the files say that cannot be followed. An error is
// ErrSetting: the files cannot be used at all.
func (k Key) Routes(h Host) ([]Endpoint, []string, error) {
	if k.BaseURLEnv != "" {
		if v := h.Env[k.BaseURLEnv]; v != "" {
			return []Endpoint{{URL: v, From: k.BaseURLEnv}}, nil, nil
		}
	}
	switch k.Endpoints {
	case CodexConfig:
		return codexEndpoints(h, k.Env)
	}
	return nil, nil, nil
}
