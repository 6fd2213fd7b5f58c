package main

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The docker client's package init (about 2 ms: distribution/reference compiles
// regular expressions) stays off the bwrap launch path: on Linux, devsandbox links no
// Docker client and hands docker runs to devsandbox-docker, the same program built
// with the linkdocker tag.
func TestDockerClientOffLaunchPath(t *testing.T) {
	lite := depsTags(t, "urfave_cli_no_docs", module+"/cmd/devsandbox")
	for _, d := range lite {
		if strings.HasPrefix(d, "github.com/docker/") || d == module+"/isolator/docker" {
			t.Errorf("devsandbox links %s; the docker backend belongs in devsandbox-docker", d)
		}
	}
	for _, d := range depsTags(t, "urfave_cli_no_docs", module+"/isolator/docker/engineaddr") {
		if strings.HasPrefix(d, "github.com/docker/") {
			t.Errorf("isolator/docker/engineaddr imports %s", d)
		}
	}
	full := depsTags(t, "urfave_cli_no_docs linkdocker", module+"/cmd/devsandbox")
	if !slices.Contains(full, "github.com/docker/docker/client") {
		t.Error("devsandbox-docker (tag linkdocker) does not link the Docker client: the check above is vacuous")
	}
}

func depsTags(t *testing.T, tags, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-tags", tags, "-json=Deps", pkg)
	cmd.Env = append(cmd.Environ(), "GOOS=linux")
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
