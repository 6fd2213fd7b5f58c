// Package tools is the tool-binding registry: what each developer tool needs inside a
// sandbox (files, env names, secret names, egress hosts). Tools return data and never
// touch the host: detection and bindings are pure functions of a Host snapshot, which
// is probed once by the caller.
package tools

import "sort"

// Mode says how a Binding appears inside the sandbox.
type Mode int

const (
	RO    Mode = iota // read-only bind of Source
	RW                // read-write bind of Source
	Mask              // an empty read-only file or directory in place of the path
	Tmpfs             // an empty writable directory
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
	Content          []byte
}

// Host is the snapshot of the host that detection and bindings read. Functions are
// injected so the registry is table-testable; the caller probes the real host.
type Host struct {
	Home     string
	Env      map[string]string
	Exists   func(path string) bool
	LookPath func(name string) bool
	ReadFile func(path string) ([]byte, error)
}

func (h Host) exists(p string) bool {
	return h.Exists != nil && h.Exists(p)
}

func (h Host) onPath(name string) bool {
	return h.LookPath != nil && h.LookPath(name)
}

// Tool declares what one developer tool needs.
type Tool struct {
	Name        string
	Description string
	// Detect reports whether the tool is present on the host.
	Detect func(Host) bool
	// Bindings lists what the tool needs mounted; called only for enabled tools.
	Bindings func(Host) []Binding
	// Env names passed from the host when set (plain configuration, not secrets).
	Env []string
	// Secrets names passed from the host when set, delivered as secrets.
	Secrets []string
	// Egress hosts the tool needs (used by the proxy policy).
	Egress []string
	// EnvSet are variables the tool sets inside the sandbox, computed from the host.
	EnvSet func(Host) map[string]string
}

// Registry is an ordered set of tools, built explicitly by the caller.
type Registry struct {
	tools []Tool
}

// NewRegistry returns a registry holding tools in the given order.
func NewRegistry(ts ...Tool) *Registry {
	return &Registry{tools: ts}
}

// Default is the registry of every tool devsandbox knows.
func Default() *Registry {
	return NewRegistry(Shell(), Git(), SSH())
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
