package tools

import (
	"slices"
	"sort"
)

// Resolved is one tool after detection, for display.
type Resolved struct {
	Name, Description string
	Detected, Enabled bool
	// Bindings that apply on this host: empty for a disabled tool, and without the
	// optional ones whose source does not exist.
	Bindings []Binding
	// Env holds the declared names and, for an enabled tool, the names it sets.
	Env, Secrets, Egress []string
	// Keys are the API keys the proxy can hold outside (tools.<name>.key = "proxy").
	Keys []Key
}

// Resolve detects every tool of r on h, in registry order. enabled[name], when non-nil,
// overrides detection (tools.<name>.enabled).
func Resolve(r *Registry, h Host, enabled map[string]*bool) []Resolved {
	var out []Resolved
	for _, t := range r.Tools() {
		rt := Resolved{Name: t.Name, Description: t.Description, Secrets: t.Secrets, Egress: t.Egress, Keys: t.Keys}
		rt.Detected = t.Detect != nil && t.Detect(h)
		rt.Enabled = rt.Detected
		if e := enabled[t.Name]; e != nil {
			rt.Enabled = *e
		}
		rt.Env = t.Env
		if rt.Enabled {
			rt.Bindings = applicable(h, t)
			rt.Env = withSet(t.Env, t, h)
		}
		out = append(out, rt)
	}
	return out
}

// applicable returns the tool's bindings minus the optional ones with no source.
func applicable(h Host, t Tool) []Binding {
	if t.Bindings == nil {
		return nil
	}
	var bs []Binding
	for _, b := range t.Bindings(h) {
		if b.Optional && b.Content == nil && (b.Mode == RO || b.Mode == RW) && !h.exists(b.Source) {
			continue
		}
		bs = append(bs, b)
	}
	return bs
}

// withSet returns env plus the sorted names t sets, without duplicates.
func withSet(env []string, t Tool, h Host) []string {
	if t.EnvSet == nil {
		return env
	}
	out := append([]string(nil), env...)
	var set []string
	for n := range t.EnvSet(h) {
		set = append(set, n)
	}
	sort.Strings(set)
	for _, n := range set {
		if !slices.Contains(env, n) {
			out = append(out, n)
		}
	}
	return out
}
