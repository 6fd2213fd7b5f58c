package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/devsandbox/devsandbox"

// TestImportDirection enforces the layering of DESIGN.md: config, tools and egress
// import nothing from isolator, proxy or cmd, and the bwrap launch path pulls in no
// container client (whose package init would slow every launch).
func TestImportDirection(t *testing.T) {
	rules := map[string][]string{
		module + "/config":              {module + "/isolator", module + "/proxy", module + "/cmd"},
		module + "/tools":               {module + "/isolator", module + "/proxy", module + "/cmd"},
		module + "/egress":              {module + "/isolator", module + "/proxy", module + "/cmd", "github.com/docker/", "github.com/containers/"},
		module + "/isolator/bwrap":      {"github.com/docker/", "github.com/containers/", "github.com/elazarl/goproxy"},
		module + "/cmd/devsandbox-init": {"github.com/urfave/", "github.com/pelletier/", "github.com/docker/", "github.com/containers/"},
	}
	for pkg, banned := range rules {
		for _, dep := range deps(t, pkg) {
			for _, b := range banned {
				if strings.HasPrefix(dep, b) {
					t.Errorf("%s imports %s (banned prefix %s)", pkg, dep, b)
				}
			}
		}
	}
}

func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-tags", "urfave_cli_no_docs", "-json=Deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	var v struct{ Deps []string }
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	return v.Deps
}
