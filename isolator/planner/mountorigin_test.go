package planner

import (
	"errors"
	"testing"

	"github.com/devsandbox/devsandbox/config"
)

// A host mount whose source is missing is named as it was given: by the --mount flag
// when it came from it, else as sandbox.host_mounts with the file and line of the
// entry, whichever layer gave the key's other entries.
func TestHostMountErrorNamesItsOrigin(t *testing.T) {
	f := newFixture(t)
	mkdirs(t, f.home+"/data")
	user := f.home + "/.config/devsandbox/config.toml"
	writeFile(t, user, "[sandbox]\nhost_mounts = [\n  \""+f.home+"/data:/data\",\n  \""+f.root+"/gone:/gone:ro\",\n]\n")
	check := func(mounts []string, want string) {
		t.Helper()
		cfg, _, err := config.Load(config.LoadOptions{Environ: f.environ, UID: 1000, GID: 1000, Flags: config.Flags{Mounts: mounts}})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err = f.tryBuild(cfg); !errors.Is(err, ErrConfig) || err.Error() != want {
			t.Errorf("Build: %v\nwant %s", err, want)
		}
	}
	check(nil, "configuration does not fit this host: sandbox.host_mounts ("+user+":4): "+f.root+"/gone does not exist; create it or remove the entry")
	// The flag's entry comes after the file's, whose layer is lower: with the file's
	// source made, the flag's is refused, named by the flag.
	mkdirs(t, f.root+"/gone")
	check([]string{f.root + "/nonexist"}, "configuration does not fit this host: --mount "+f.root+"/nonexist:"+f.root+"/nonexist: "+f.root+"/nonexist does not exist; create it or drop the flag")
}
