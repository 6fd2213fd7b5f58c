package config

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func starterHost(t *testing.T) (string, Host) {
	t.Helper()
	home, environ := testHome(t)
	host, err := HostFromEnviron(environ, 1000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return home, host
}

var (
	commentedKey   = regexp.MustCompile(`^# ([A-Za-z_]+) = `)
	commentedTable = regexp.MustCompile(`^# (\[\[?[a-z_.]+\]\]?)$`)
	table          = regexp.MustCompile(`^\[\[?([a-z_.]+)\]\]?$`)
)

// TestStarterFile checks the starter is valid as written and with every key
// uncommented, that it names every schema key, and that its [user config only] and
// [stricter only] marks say what checkProject does.
func TestStarterFile(t *testing.T) {
	home, host := starterHost(t)
	doc := StarterFile()
	if err := ValidateFile(writeFile(t, filepath.Join(home, "starter.toml"), string(doc)), host); err != nil {
		t.Fatalf("as written: %v", err)
	}

	var uncommented []string
	seen := map[string]bool{}
	current, help := "", ""
	for _, line := range strings.Split(string(doc), "\n") {
		if m := commentedTable.FindStringSubmatch(line); m != nil {
			line = m[1]
		}
		if m := table.FindStringSubmatch(line); m != nil {
			current = m[1]
		}
		if m := commentedKey.FindStringSubmatch(line); m != nil {
			line = strings.TrimPrefix(line, "# ")
			key := schemaKeyOf(join(current, m[1]))
			seen[key] = true
			wantMark := map[string]string{"no": "[user config only]", "stricter only": "[stricter only]"}[projectClass(key)]
			for _, mark := range []string{"[user config only]", "[stricter only]"} {
				if has := strings.Contains(help, mark); has != (mark == wantMark) {
					t.Errorf("%s: help line %q: has %s = %v, want %v", key, help, mark, has, !has)
				}
			}
		} else if strings.HasPrefix(line, "# ") {
			help = line
		}
		uncommented = append(uncommented, line)
	}
	all := strings.Join(uncommented, "\n")
	if err := ValidateFile(writeFile(t, filepath.Join(home, "all.toml"), all), host); err != nil {
		t.Errorf("uncommented: %v\n%s", err, all)
	}
	for _, k := range schemaKeys() {
		// An array of tables is shown through its fields.
		if !seen[k] && !slices.ContainsFunc(slices.Collect(maps.Keys(seen)), func(s string) bool { return strings.HasPrefix(s, k+".") }) {
			t.Errorf("the starter file does not show %s", k)
		}
	}
}

// schemaKeyOf maps a key as written in a file to its schema key: a tool name becomes
// <name>, a table entry (env.set.EDITOR) its table.
func schemaKeyOf(key string) string {
	parts := strings.Split(key, ".")
	switch {
	case parts[0] == "tools" && len(parts) == 3:
		return "tools.<name>." + parts[2]
	case len(parts) == 3 && (strings.HasPrefix(key, "env.set.") || strings.HasPrefix(key, "secrets.files.")):
		return parts[0] + "." + parts[1]
	}
	return key
}

func TestStarterFileVersion(t *testing.T) {
	defer func(v string) { Version = v }(Version)
	Version = "1.2.3"
	if !bytes.Contains(StarterFile(), []byte(`# image = "devsandbox/default:1.2.3"`)) || bytes.Contains(StarterFile(), []byte("{version}")) {
		t.Error("the starter file does not name this version's image")
	}
}

func TestWriteStarter(t *testing.T) {
	_, host := starterHost(t)
	path := UserFile(host)
	if err := WriteStarter(path); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, StarterFile()) {
		t.Fatalf("wrote %q, %v", got, err)
	}
	if fi, _ := os.Stat(filepath.Dir(path)); fi.Mode().Perm() != 0o700 {
		t.Errorf("created its directory with mode %v", fi.Mode().Perm())
	}

	writeFile(t, path, "isolator = \"bwrap\"\n")
	err = WriteStarter(path)
	if ce := asConfigError(t, err); ce.File != path || !errors.Is(err, fs.ErrExist) {
		t.Errorf("over an existing file: %v", err)
	}
	if want := path + ": not overwriting it: file already exists; edit it (`devsandbox config validate " + path + "` checks it), or move it aside to write a new starter"; err == nil || err.Error() != want {
		t.Errorf("over an existing file:\n got %v\nwant %s", err, want)
	}
	if got, _ := os.ReadFile(path); string(got) != "isolator = \"bwrap\"\n" {
		t.Errorf("the existing file was changed: %q", got)
	}

	// A dangling symlink is not followed to create its target.
	link := filepath.Join(t.TempDir(), "link.toml")
	if err := os.Symlink(filepath.Join(t.TempDir(), "target.toml"), link); err != nil {
		t.Fatal(err)
	}
	if err := WriteStarter(link); !errors.Is(err, fs.ErrExist) {
		t.Errorf("through a dangling symlink: %v", err)
	}
}
