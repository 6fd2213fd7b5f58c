// Package tools is the tool-binding registry: what each developer tool needs inside a
// sandbox (files, env names, secret names, egress hosts). Tools return data and never
// touch the host: detection and bindings are pure functions of a Host snapshot, which
// the caller probes once.
//
// # Where bindings land
//
// A path under the host home is bound at its HomeRelativeDest, never at a Dest: bwrap
// keeps the host home path, docker and krun put their home elsewhere. A location a tool
// finds through an XDG variable is bound at its default place in the sandbox home,
// because XDG_* variables are not passed in. A location named by the tool's own variable
// (CLAUDE_CONFIG_DIR, CODEX_HOME, CARGO_HOME, GH_CONFIG_DIR, ...) is bound where the
// variable points, and the variable is passed: below the host home, home-relative like
// any path there, and a sandbox whose home is elsewhere gives the variable that place
// (isolator.EnvVar.HomeRel). Bindings are read-only unless the tool
// must write, and optional wherever the file may not exist.
//
// # Credentials
//
// Files that let their holder act as the user are bound only where the tool cannot work
// without them, and read-only unless the tool must write them:
//   - Claude Code, Codex, Gemini CLI and opencode refresh their OAuth tokens in place and
//     keep session state in their own directory, which is therefore read-write. The
//     entries of that directory which the unsandboxed tool later runs or obeys (settings
//     with hooks and MCP servers, commands, agents, plugins, user instructions) are bound
//     read-only over it, so a sandboxed agent cannot plant code for its host self.
//   - gh's hosts.yml is bound read-only: gh cannot authenticate without it unless GH_TOKEN
//     is set.
//   - ~/.npmrc, ~/.pypirc, cargo's credentials, ~/.docker, ~/.netrc, ~/.git-credentials
//     and ssh keys are never bound. Their tokens reach the sandbox only as declared
//     secrets (NPM_TOKEN, GH_TOKEN, ...), delivered when set on the host unless
//     tools.<name>.secrets = false. Publishing tokens (CARGO_REGISTRY_TOKEN,
//     UV_PUBLISH_TOKEN, TWINE_PASSWORD) are not declared at all: pass them with -e.
//
// Not guaranteed: a guarded file that does not exist at launch and whose format does not
// accept an empty file (Claude's and Gemini's settings.json) is not guarded, since a
// guard would leave an empty, invalid file on the host. A guarded file or directory that
// does not exist is otherwise replaced by an empty read-only file or an empty scratch
// directory, whose mount point is left, empty, on the host.
//
// # Executables
//
// A tool installed under the home (~/.local/bin, ~/.cargo/bin, nvm, pipx, mise, ...) is
// bound read-only with what it needs to run, so it works in the sandbox and the sandbox
// cannot replace what the host runs; installing or updating such a tool from inside the
// sandbox fails. PATH in the sandbox is the host PATH.
//
// # Caches
//
// Language caches (Go module and build caches, npm, pip, uv, cargo registry) are never
// bound from the host: the tools need them writable (a read-only GOMODCACHE does not
// work), and a writable host cache would let the sandbox poison what host builds use.
// The sandbox home keeps its own, per project.
package tools

import "sort"

// Mode says how a Binding appears inside the sandbox.
type Mode int

const (
	RO    Mode = iota // read-only bind of Source
	RW                // read-write bind of Source
	Mask              // an empty read-only file or directory in place of the path
	Tmpfs             // an empty writable directory
	Own               // a persistent, per-project directory of the sandbox's own, never the host's (no Source)
)

func (m Mode) String() string {
	switch m {
	case RO:
		return "ro"
	case RW:
		return "rw"
	case Mask:
		return "mask"
	case Tmpfs:
		return "tmpfs"
	case Own:
		return "own"
	}
	return "unknown"
}

// Binding is one path a tool needs. Exactly one of Dest and HomeRelativeDest is set:
// HomeRelativeDest (e.g. ".gitconfig") is resolved by each isolator against its own
// in-sandbox home. Content, when non-nil, is a generated file placed at the destination
// instead of a bind of Source (always read-only).
type Binding struct {
	Source           string
	Dest             string
	HomeRelativeDest string
	Mode             Mode
	Optional         bool // skip silently when Source does not exist
	// Create makes a directory at Source when it does not exist (shared state the
	// tool keeps on the host, such as this project's sessions).
	Create  bool
	Content []byte
}

// Tool declares what one developer tool needs.
type Tool struct {
	Name        string
	Description string
	// Detect reports whether the tool is present on the host.
	Detect func(Host) bool
	// Bindings lists what the tool needs mounted, in order (a later binding covers an
	// earlier one); called only for enabled tools.
	Bindings func(Host) []Binding
	// Env names passed from the host when set (plain configuration, not secrets).
	Env []string
	// Secrets names passed from the host when set, delivered as secrets.
	Secrets []string
	// Egress entries the tool needs (host, *.domain, optional :port), for the proxy policy.
	Egress []string
	// EnvSet are variables the tool sets inside the sandbox, computed from the host.
	EnvSet func(Host) map[string]string
	// Keys are the tool's API keys the egress proxy can hold outside the sandbox
	// (tools.<name>.key = "proxy"); each is one of Secrets.
	Keys []Key
	// Warnings are for people: how the tool's bindings differ from the usual ones on
	// this host, and what to do about it; nil when none.
	Warnings func(Host) []string
}

// Key is an API key a tool reads from a variable and sends in a request header to its
// API. Held outside the sandbox, the variable inside holds a placeholder and the proxy
// sets the header on requests to the API host (see isolator/planner.ToolKeys).
type Key struct {
	Env    string // the variable holding the key (ANTHROPIC_API_KEY)
	Header string // the header the tool sends it in (x-api-key, Authorization)
	Format string // how, with "{}" for the key ("Bearer {}"); "" is the key alone
	// Host is where the tool sends it by default (an egress entry: api.anthropic.com);
	// "" when there is no default endpoint.
	Host string
	// BaseURLEnv names the variable that points the tool at another endpoint (a
	// gateway, a compatible API). When it is set on the host, the key goes to its
	// host, not to Host: that is where the tool sends it.
	BaseURLEnv string
	// Endpoints, for a tool that takes its endpoints from its own configuration
	// files instead, says which files (Codex's config.toml and profiles): the key is
	// held for every endpoint they say the tool may send it to (Key.Routes), the
	// default included when the tool may still use it. At most one of BaseURLEnv and
	// Endpoints is set.
	Endpoints EndpointsFrom
	// IgnoredEnv names a variable that looks as if it moved the endpoint but that
	// the tool does not read (Codex ignores OPENAI_BASE_URL, which other tools read):
	// when it is set on the host the key does not follow it, and a warning says so.
	IgnoredEnv string
}

// Registry is an ordered set of tools, built explicitly by the caller.
type Registry struct {
	tools []Tool
}

// NewRegistry returns a registry holding tools in the given order.
func NewRegistry(ts ...Tool) *Registry {
	return &Registry{tools: ts}
}

// Default is the registry of every tool devsandbox knows. Order matters only where
// bindings overlap: shells and languages come before the agents that use them.
func Default() *Registry {
	return NewRegistry(
		Shell(), OhMyZsh(), Powerlevel10k(), Starship(), Tmux(), Zellij(), Git(), SSH(), GH(),
		Go(), Node(), Python(), Cargo(), Mise(), Nvim(),
		Claude(), Codex(), Gemini(), Copilot(), Cursor(), Amp(), Goose(), Crush(), Qwen(), Pi(), OpenCode(), Aider(),
	)
}

// Tools returns the registered tools in order.
func (r *Registry) Tools() []Tool {
	return r.tools
}

// Names returns the sorted tool names.
func (r *Registry) Names() []string {
	var ns []string
	for _, t := range r.tools {
		ns = append(ns, t.Name)
	}
	sort.Strings(ns)
	return ns
}

// Lookup returns the tool called name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	for _, t := range r.tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}
