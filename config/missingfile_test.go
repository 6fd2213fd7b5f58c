package config

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMissingFileErrorsSayTheFix: a config file that is not there is named with what
// to do about it, on each way a user names one (--config, config validate, config
// trust with and without FILE), and the error still matches fs.ErrNotExist.
func TestMissingFileErrorsSayTheFix(t *testing.T) {
	home, environ := testHome(t)
	host, err := HostFromEnviron(environ, 1000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(home, "nowhere.toml")
	project := filepath.Join(home, "src", "p")
	projectFile := filepath.Join(project, ProjectFileName)

	_, _, loadErr := Load(LoadOptions{Environ: environ, UID: 1000, GID: 1000, Flags: Flags{ConfigFile: missing}})
	_, _, validateErr := LoadFile(missing, host)
	_, trustErr := Trust(host, projectFile, time.Now())
	_, trustFileErr := TrustConfigFile(host, missing, time.Now())

	for _, tc := range []struct {
		name      string
		err       error
		file, fix string
	}{
		{"--config", loadErr, missing, "--config names the file to read instead of your user config: fix the path, or write a starter one there with `devsandbox config init " + missing + "`"},
		{"config validate", validateErr, missing, "name an existing config file, or write a starter one there with `devsandbox config init " + missing + "`"},
		{"config trust", trustErr, projectFile, "there is no project file to trust: write one (`devsandbox config init " + projectFile + "`), or name the --config file to trust (`devsandbox config trust FILE`)"},
		{"config trust FILE", trustFileErr, missing, "fix the path: `devsandbox config trust FILE` trusts an existing --config file"},
	} {
		if tc.err == nil {
			t.Errorf("%s: no error for a missing file", tc.name)
			continue
		}
		want := tc.file + ": no such file or directory; " + tc.fix
		if got := tc.err.Error(); got != want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, want)
		}
		if !errors.Is(tc.err, fs.ErrNotExist) {
			t.Errorf("%s: %v does not match fs.ErrNotExist", tc.name, tc.err)
		}
	}
}

// TestMissingFixLeavesOtherErrors: only a missing file gets the fix.
func TestMissingFixLeavesOtherErrors(t *testing.T) {
	home, _ := testHome(t)
	bad := writeFile(t, filepath.Join(home, "bad.toml"), "[sandbox\n")
	host, err := HostFromEnviron([]string{"HOME=" + home, "USER=alice"}, 1000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = LoadFile(bad, host)
	if err == nil || strings.Contains(err.Error(), "config init") {
		t.Errorf("a syntax error got the missing file's fix: %v", err)
	}
}
