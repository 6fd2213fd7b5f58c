package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// hostVarRead matches a host variable read by its literal name in devsandbox's code:
// vars["NAME"], h.Vars["NAME"], HostEnv["NAME"], and a constant ending in Var
// (IsolatorVar = "DEVSANDBOX_ISOLATOR").
var hostVarRead = regexp.MustCompile(`(?:[Vv]ars|HostEnv)\["([A-Z][A-Z0-9_]*)"\]|\b[A-Za-z]+Var\s*=\s*"([A-Z][A-Z0-9_]*)"`)

// TestDocsEnvironment checks that every environment variable devsandbox reads by
// name from the host is named in docs/configuration.md (a tool's own variables may
// be in docs/tools.md or docs/security-model.md, where the tool's handling is
// described), as the key table is checked against the schema (TestDocsKeyTable).
func TestDocsEnvironment(t *testing.T) {
	read := map[string]string{} // name -> a file reading it
	for _, dir := range []string{"../cmd", "../config", "../isolator", "../proxy", "../tools", "../egress", "../internal"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range hostVarRead.FindAllStringSubmatch(string(b), -1) {
				read[m[1]+m[2]] = path
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := read["DEVSANDBOX_ISOLATOR"]; !ok || len(read) < 10 {
		t.Fatalf("found %d variables read (%v): is the extraction broken?", len(read), read)
	}
	docs := map[string]string{}
	for _, f := range []string{"configuration.md", "tools.md", "security-model.md"} {
		b, err := os.ReadFile(filepath.Join("../docs", f))
		if err != nil {
			t.Fatal(err)
		}
		docs[f] = string(b)
	}
	// Set by devsandbox for its own processes, never taken from your environment.
	for _, own := range []string{"DEVSANDBOX_PROXY_CA"} {
		if _, ok := read[own]; !ok {
			t.Errorf("%s is no longer found: update this list", own)
		}
		delete(read, own)
	}
	var missing []string
	for name, path := range read {
		re := regexp.MustCompile("`\\$?" + name + `\b`)
		named := func(f string) bool { return re.MatchString(docs[f]) }
		tool := strings.HasPrefix(name, "MISE_") // a tool's variable
		if !named("configuration.md") && !(tool && (named("tools.md") || named("security-model.md"))) {
			missing = append(missing, name+" (read in "+path+")")
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("variables devsandbox reads that docs/configuration.md does not name:\n  %s", strings.Join(missing, "\n  "))
	}
}
