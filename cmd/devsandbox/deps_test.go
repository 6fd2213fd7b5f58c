package main

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/devsandbox/devsandbox"

// TestImportDirection enforces the layering of DESIGN.md: config, tools and egress
// import nothing from isolator, proxy or cmd, the syscall policy nothing of this
// module (and no system interface: it is pure and portable), and the bwrap launch path pulls in no
// container client (whose package init would slow every launch). devsandbox links
// neither the proxy nor goproxy (whose init parses an RSA key pair, on every launch):
// it reads the audit log through proxy/audit and runs the proxy as devsandbox-proxy.
// Nor does it link podman's bindings (many milliseconds of package init) or the Docker
// client (about 2 ms: distribution/reference compiles regular expressions): the krun
// and docker backends run as devsandbox-krun and devsandbox-docker, reached through
// isolator/krun/helper and isolator/docker/helper (package handoff). The container
// core and the host services a run starts link none of them either. What devsandbox
// links is checked for Linux and macOS. The init's roles that bwrap and the
// containers start on every launch (package sandboxinit, which devsandbox links to
// play the bwrap init) link no netlink or nftables (a package init of their own on
// every launch): only devsandbox-init's firewall role, the docker isolator's, does,
// and devsandbox-bwrap-init, the bwrap init, links neither that role nor its packages.
// Nor does the init link the crypto packages (crypto/rand's init alone is about 25
// page faults): random names come from getrandom(2). devsandbox links neither
// crypto/x509 nor crypto/tls (about 45 page faults at every start): it reads the
// proxy CA through proxy/ca/capem and has devsandbox-proxy make it.
func TestImportDirection(t *testing.T) {
	// Banned import path prefixes.
	rules := map[string][]string{
		module + "/config":                 {module + "/isolator", module + "/proxy", module + "/cmd"},
		module + "/tools":                  {module + "/isolator", module + "/proxy", module + "/cmd"},
		module + "/egress":                 {module + "/isolator", module + "/proxy", module + "/cmd", "github.com/docker/", "github.com/containers/", "github.com/elazarl/goproxy"},
		module + "/syscalls":               {module + "/", "github.com/docker/", "github.com/containers/", "github.com/moby/", "github.com/elazarl/goproxy", "golang.org/x/sys"},
		module + "/isolator/bwrap":         {"github.com/docker/", "github.com/containers/", "github.com/elazarl/goproxy"},
		module + "/cmd/devsandbox":         {"github.com/elazarl/goproxy", "github.com/containers/", "github.com/docker/", "github.com/google/nftables", "github.com/mdlayher/netlink", "crypto/x509", "crypto/tls", "crypto/ecdsa"},
		module + "/isolator/sandboxinit":   {"github.com/google/nftables", "github.com/mdlayher/netlink", "crypto/", "github.com/urfave/", "github.com/pelletier/", "github.com/docker/", "github.com/containers/"},
		module + "/isolator/krun/helper":   {"github.com/containers/"},
		module + "/isolator/docker/helper": {"github.com/docker/"},
		module + "/isolator/handoff":       {"github.com/docker/", "github.com/containers/", "github.com/elazarl/goproxy"},
		module + "/isolator/container":     {"github.com/docker/", "github.com/containers/", "github.com/elazarl/goproxy"},
		module + "/isolator/hostsvc":       {"github.com/docker/", "github.com/containers/", "github.com/elazarl/goproxy"},
		module + "/proxy/audit":            {"github.com/elazarl/goproxy"},
		module + "/cmd/devsandbox-init":    {"github.com/urfave/", "github.com/pelletier/", "github.com/docker/", "github.com/containers/", "crypto/"},
		// The bwrap init: the bwrap roles only, not the docker isolator's firewall.
		module + "/cmd/devsandbox-bwrap-init": {module + "/isolator/sandboxinit/firewall", "github.com/google/nftables", "github.com/mdlayher/netlink", "github.com/urfave/", "github.com/pelletier/", "github.com/docker/", "github.com/containers/", "crypto/"},
	}
	// Banned packages, by exact path (their subpackages may be allowed).
	exact := map[string][]string{
		module + "/cmd/devsandbox":            {module + "/proxy", module + "/proxy/ca", module + "/isolator/krun", module + "/isolator/docker", module + "/egress/netfilter"},
		module + "/isolator/krun/helper":      {module + "/isolator/krun"},
		module + "/isolator/docker/helper":    {module + "/isolator/docker"},
		module + "/cmd/devsandbox-bwrap-init": {module + "/egress/netfilter"},
	}
	for pkg, banned := range rules {
		for _, dep := range deps(t, pkg, "") {
			for _, b := range banned {
				if strings.HasPrefix(dep, b) {
					t.Errorf("%s imports %s (banned prefix %s)", pkg, dep, b)
				}
			}
		}
	}
	for pkg, banned := range exact {
		for _, dep := range deps(t, pkg, "") {
			if slices.Contains(banned, dep) {
				t.Errorf("%s imports %s (banned)", pkg, dep)
			}
		}
	}
	// macOS has no bwrap: devsandbox there is the docker backend's front only.
	for _, dep := range deps(t, module+"/cmd/devsandbox", "darwin") {
		for _, b := range []string{"github.com/docker/", "github.com/elazarl/goproxy", module + "/isolator/docker"} {
			if strings.HasPrefix(dep, b) && dep != module+"/isolator/docker/helper" && dep != module+"/isolator/docker/engineaddr" {
				t.Errorf("devsandbox for macOS imports %s (banned prefix %s)", dep, b)
			}
		}
	}
	// The checks above mean something only if deps sees each library where it is linked.
	if !slices.Contains(deps(t, module+"/cmd/devsandbox-proxy", ""), "github.com/elazarl/goproxy") {
		t.Error("cmd/devsandbox-proxy does not list goproxy among its deps: the import checks are vacuous")
	}
	if !slices.Contains(deps(t, module+"/cmd/devsandbox-init", ""), "github.com/google/nftables") {
		t.Error("cmd/devsandbox-init does not list nftables among its deps (its firewall role): the import checks are vacuous")
	}
	if !slices.Contains(deps(t, module+"/cmd/devsandbox-bwrap-init", ""), module+"/isolator/sandboxinit") {
		t.Error("cmd/devsandbox-bwrap-init does not list sandboxinit among its deps: its import checks are vacuous")
	}
	if !slices.Contains(deps(t, module+"/cmd/devsandbox-krun", ""), "github.com/containers/podman/v5/pkg/bindings") {
		t.Error("cmd/devsandbox-krun does not list podman's bindings among its deps: the import checks are vacuous")
	}
	if !slices.Contains(deps(t, module+"/cmd/devsandbox-docker", ""), "github.com/docker/docker/client") {
		t.Error("cmd/devsandbox-docker does not list the Docker client among its deps: the import checks are vacuous")
	}
}

// deps lists what pkg links, built for goos ("": this system's).
func deps(t *testing.T, pkg, goos string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-tags", "urfave_cli_no_docs", "-json=Deps", pkg)
	if goos != "" {
		cmd.Env = append(cmd.Environ(), "GOOS="+goos)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	var v struct{ Deps []string }
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	return v.Deps
}
