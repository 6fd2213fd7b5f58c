package tools

import (
	"path"
	"strings"
)

// State is a sub-path of a tool's own directory that the tool writes: sessions,
// history, caches, its own token refreshes.
type State struct {
	Path string // relative to the directory, clean, "/"-separated
	Dir  bool   // a directory; else a file
	// Shared state is the host's, bound read-write: what the user expects to carry
	// between the sandbox and the host (an OAuth token the tool refreshes, this
	// project's sessions). A shared directory absent on the host is created there; a
	// shared file absent on the host is the sandbox's own. Only state the host tool
	// neither runs nor obeys may be shared.
	Shared bool
}

// below reports whether s lies below the shared directory state sh.
func (s State) below(sh State) bool {
	return sh.Shared && sh.Dir && strings.HasPrefix(s.Path, sh.Path+"/")
}

// ownDir returns the bindings of a tool's own directory d (~/.claude, ~/.codex), which
// holds both what the host tool runs or obeys (settings, hooks, MCP servers, plugins,
// instructions, shell snapshots) and the state it writes.
//
// Inside the sandbox the directory is the sandbox's own, per-project copy (a directory
// of the project's data, see Own): every entry the host's directory
// has at launch is bound over it read-only, except the top-level entries holding
// declared state; shared state is then bound read-write from the host. So nothing the
// sandbox writes there reaches the host but shared state, and a name that does not
// exist on the host at launch is created in the sandbox's copy, never in the host's.
// The host tool does not see the sandbox's copy.
//
// When d does not exist on the host the sandbox's copy is all there is.
func (h Host) ownDir(d place, state ...State) []Binding {
	if !h.exists(d.src) {
		return nil
	}
	own := d.bind(Own)
	own.Source, own.Optional = "", false
	bs := append([]Binding{own}, h.ownEntries(d, state)...)
	for _, s := range state {
		if !s.Shared {
			continue
		}
		p := d.join(s.Path)
		switch {
		case s.Dir:
			b := p.bind(RW)
			b.Optional, b.Create = false, true
			bs = append(bs, b)
		case h.exists(p.src):
			bs = append(bs, p.bind(RW))
		}
	}
	// A directory below shared state that is not shared itself is the sandbox's own,
	// bound over the host's (which the sandbox then neither sees nor changes); being
	// a mount point, it cannot be renamed away and replaced by one the host would read.
	for _, s := range state {
		for _, sh := range state {
			if !s.Shared && s.Dir && s.below(sh) {
				b := d.join(s.Path).bind(Own)
				b.Source, b.Optional = "", false
				bs = append(bs, b)
				break
			}
		}
	}
	return bs
}

// ownEntries binds each entry of the host directory d read-only, but those the state
// names: an entry that is state itself (its first path element, which may be a
// pattern such as "*.sqlite") is left to the sandbox's copy; one that only holds state
// further down is handled the same way, one level down.
func (h Host) ownEntries(d place, state []State) []Binding {
	var bs []Binding
	for _, name := range h.entries(d.src) {
		owned, below := false, []State(nil)
		for _, s := range state {
			top, rest, nested := strings.Cut(s.Path, "/")
			if ok, _ := path.Match(top, name); !ok {
				continue
			}
			if !nested || s.Shared {
				owned = true
				break
			}
			below = append(below, State{Path: rest, Dir: s.Dir})
		}
		switch {
		case owned:
		case below != nil:
			bs = append(bs, h.ownEntries(d.join(name), below)...)
		default:
			bs = append(bs, d.join(name).bind(RO))
		}
	}
	return bs
}

// entries returns the names in the host directory dir, sorted; none when it cannot be
// read.
func (h Host) entries(dir string) []string {
	if h.ReadDir == nil {
		return nil
	}
	names, err := h.ReadDir(dir)
	if err != nil {
		return nil
	}
	return names
}

// projectKey returns the project directory as a single path element, the way a tool
// keys per-project state by it (Claude Code's claudeKey), or "" when there is no
// project or the key would exceed max (the tool then shortens it with a hash of its
// own).
func (h Host) projectKey(max int) string {
	if h.Project == "" || !path.IsAbs(h.Project) {
		return ""
	}
	if k := claudeKey(h.Project); len(k) <= max {
		return k
	}
	return ""
}
