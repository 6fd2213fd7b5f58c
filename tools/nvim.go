package tools

import (
	"path/filepath"
	"strings"
)

// Nvim exposes Neovim's configuration and data (plugins, parsers, mason's tools)
// read-only: both are code the host editor runs. State (shada history, swap and undo
// files) and the cache stay in the sandbox home, so the host's editing history is not
// exposed. Plugin managers cannot install or update from inside the sandbox.
func Nvim() Tool {
	return Tool{
		Name:        "nvim",
		Description: "Neovim: config and plugins (read-only); own state and cache",
		Detect: func(h Host) bool {
			return h.onPath("nvim") || h.exists(h.config(nvimAppName(h)).src)
		},
		Bindings: func(h Host) []Binding {
			app := nvimAppName(h)
			bs := []Binding{h.config(app).bind(RO), h.data(app).bind(RO)}
			if root, ok := nvimRoot(h); ok {
				bs = append(bs, h.at(root).bind(RO))
			}
			return h.withExecutables(bs, "nvim")
		},
		Env: []string{"NVIM_APPNAME"},
	}
}

// nvimAppName is the directory name Neovim uses below the XDG dirs: NVIM_APPNAME when
// it is a plain name, else "nvim".
func nvimAppName(h Host) string {
	if a := h.Env["NVIM_APPNAME"]; a != "" && !strings.Contains(a, "/") && !strings.HasPrefix(a, ".") {
		return a
	}
	return "nvim"
}

// nvimRoot is the prefix of a Neovim release unpacked under the home (…/bin/nvim next
// to …/share/nvim/runtime), which nvim needs besides its binary.
func nvimRoot(h Host) (string, bool) {
	p, ok := h.lookPath("nvim")
	if !ok || !filepath.IsAbs(p) {
		return "", false
	}
	bin := filepath.Dir(h.realPath(p))
	root := filepath.Dir(bin)
	if filepath.Base(bin) != "bin" || !h.installable(root) || !h.exists(root+"/share/nvim/runtime") {
		return "", false
	}
	return root, true
}
