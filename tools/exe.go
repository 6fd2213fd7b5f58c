package tools

import (
	"path/filepath"
	"strings"
)

// executable returns read-only bindings that let the command name run in the sandbox
// when it is installed under the home: the PATH directory holding it (a directory bind
// keeps its symlinks) and, when it is a symlink, the install root of its target. Only
// paths below a hidden top-level entry of the home (~/.local, ~/.cargo, ~/.nvm, ...) are
// bound: a PATH entry elsewhere may lie in a project, which must stay writable. Nothing
// when the command is not on PATH or lives outside the home, where the system view
// provides it.
func (h Host) executable(name string) []Binding {
	p, ok := h.lookPath(name)
	if !ok || !filepath.IsAbs(p) {
		return nil
	}
	var bs []Binding
	dir := filepath.Dir(p)
	if h.installable(dir) {
		bs = append(bs, h.at(dir).bind(RO))
	}
	if real := h.realPath(p); real != p {
		root := h.installRoot(real)
		if h.installable(root) && !within(root, dir) {
			bs = append(bs, h.at(root).bind(RO))
		}
	}
	return bs
}

// installable reports whether p may be bound as part of an installation.
func (h Host) installable(p string) bool {
	return strings.HasPrefix(h.rel(p), ".") && !h.exposesCredentials(p)
}

// installRoot returns what a resolved executable needs besides itself: its npm package
// (a script that loads its siblings), its Python virtualenv (a script run by the venv's
// python), or else its directory (a single binary, e.g. one of Claude Code's versions).
func (h Host) installRoot(real string) string {
	const nm = "/node_modules/"
	if i := strings.Index(real, nm); i >= 0 {
		parts := strings.Split(real[i+len(nm):], "/")
		n := 1
		if strings.HasPrefix(parts[0], "@") && len(parts) > 2 {
			n = 2 // @scope/name
		}
		return real[:i+len(nm)] + strings.Join(parts[:n], "/")
	}
	dir := filepath.Dir(real)
	if filepath.Base(dir) == "bin" && h.exists(filepath.Dir(dir)+"/pyvenv.cfg") {
		return filepath.Dir(dir)
	}
	return dir
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// withExecutables appends the bindings that let the named commands run, then drops the
// read-only binds an earlier one already provides.
func (h Host) withExecutables(bs []Binding, names ...string) []Binding {
	for _, n := range names {
		bs = append(bs, h.executable(n)...)
	}
	return compact(bs)
}

// compact drops each read-only bind whose destination already shows its source: the
// latest binding covering the destination is a read-only bind of a directory holding
// the source at the same relative place, and nothing between them lies below the
// destination. Order is kept.
func compact(bs []Binding) []Binding {
	out := bs[:0:0]
	for _, b := range bs {
		if b.Mode == RO && b.Content == nil && redundant(out, b) {
			continue
		}
		out = append(out, b)
	}
	return out
}

func redundant(prev []Binding, b Binding) bool {
	bd := b.Dest + b.HomeRelativeDest
	for i := len(prev) - 1; i >= 0; i-- {
		a := prev[i]
		if (a.Dest == "") != (b.Dest == "") {
			continue
		}
		ad := a.Dest + a.HomeRelativeDest
		switch {
		case within(bd, ad):
			return a.Mode == RO && a.Content == nil && within(b.Source, a.Source) &&
				b.Source[len(a.Source):] == bd[len(ad):]
		case within(ad, bd):
			return false // b covers it: dropping b would leave it visible
		}
	}
	return false
}
