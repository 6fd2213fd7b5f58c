package proxy

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports keeps the layering of DESIGN.md: proxy is a library that imports nothing
// from cmd or isolator.
func TestImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skip("go list:", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"/cmd/", "/isolator"} {
			if strings.HasPrefix(dep, "github.com/devsandbox/devsandbox") && strings.Contains(dep, banned) {
				t.Errorf("proxy imports %s", dep)
			}
		}
	}
}
