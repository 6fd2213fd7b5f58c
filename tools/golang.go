package tools

import (
	"path/filepath"
	"strings"
)

// Go exposes the Go toolchain when it is installed under the home, the tools `go
// install` put in GOBIN or GOPATH/bin, and the `go env -w` file, all read-only (so `go
// install` in the sandbox fails rather than replace a binary the host runs).
//
// The module cache is not bound: Go needs a writable GOMODCACHE (a read-only one fails
// at the first download or lock), and a writable host cache would let the sandbox
// rewrite module sources host builds trust without re-verifying. The sandbox home keeps
// its own GOPATH/pkg/mod and build cache. A GOPATH outside the home is not writable in
// the sandbox; add it to sandbox.rw_binds to accept sharing its module cache.
func Go() Tool {
	return Tool{
		Name:        "go",
		Description: "Go toolchain under the home, GOPATH/bin and go env file (read-only); no module cache",
		Detect: func(h Host) bool {
			return h.onPath("go") || h.exists(goEnvFile(h).src)
		},
		Bindings: func(h Host) []Binding {
			bs := []Binding{goEnvFile(h).bind(RO)}
			if root, ok := goRoot(h); ok {
				bs = append(bs, h.at(root).bind(RO))
			}
			bs = append(bs, goBin(h).bind(RO))
			return h.withExecutables(bs, "go")
		},
		Env: []string{"GOPATH", "GOBIN", "GOROOT", "GOENV", "GOFLAGS", "GOPROXY", "GOPRIVATE",
			"GONOPROXY", "GONOSUMDB", "GOSUMDB", "GOINSECURE", "GOTOOLCHAIN", "GOEXPERIMENT",
			"GOAMD64", "GOARM64", "CGO_ENABLED"},
		Egress: []string{"proxy.golang.org", "sum.golang.org", "golang.org", "go.dev", "vuln.go.dev"},
	}
}

// goEnvFile is the file `go env -w` writes: GOENV, else os.UserConfigDir()/go/env.
func goEnvFile(h Host) place { return h.envPlace("GOENV", h.config("go/env")) }

// goBin is where `go install` puts binaries: GOBIN, else the first GOPATH entry's bin.
func goBin(h Host) place {
	if p, ok := h.usable(h.Env["GOBIN"]); ok {
		return p
	}
	if gp, _, _ := strings.Cut(h.Env["GOPATH"], string(filepath.ListSeparator)); filepath.IsAbs(gp) {
		if p, ok := h.usable(filepath.Join(gp, "bin")); ok {
			return p
		}
	}
	return h.home("go/bin")
}

// goRoot returns GOROOT when it lies under the home: GOROOT if set, else the tree the
// go command on PATH belongs to (…/bin/go). A toolchain elsewhere under the home is
// bound only below a hidden entry or ~/sdk (golang.org/dl), so that a Go checkout that
// is itself the project stays writable.
func goRoot(h Host) (string, bool) {
	root := filepath.Clean(h.Env["GOROOT"])
	if !filepath.IsAbs(root) {
		p, ok := h.lookPath("go")
		if !ok || !filepath.IsAbs(p) {
			return "", false
		}
		bin := filepath.Dir(h.realPath(p))
		if filepath.Base(bin) != "bin" {
			return "", false
		}
		root = filepath.Dir(bin)
		if r := h.rel(root); !strings.HasPrefix(r, ".") && !strings.HasPrefix(r, "sdk/") {
			return "", false
		}
	}
	if h.rel(root) == "" || h.exposesCredentials(root) || !h.exists(root+"/src/runtime") {
		return "", false
	}
	return root, true
}
