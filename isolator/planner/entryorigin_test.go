package planner

import (
	"errors"
	"testing"

	"github.com/devsandbox/devsandbox/config"
)

// A bind or secret file whose source is missing is named as it was given, so that a
// user can act on it: an entry of a file with the file and the entry's own line (the
// user's file), a --secret-file by its flag.
func TestMissingSourceErrorNamesItsOrigin(t *testing.T) {
	f := newFixture(t)
	mkdirs(t, f.home+"/data")
	user := f.home + "/.config/devsandbox/config.toml"
	writeFile(t, user, "[sandbox]\nro_binds = [\n  \""+f.home+"/data\",\n  \""+f.root+"/gone-ro\",\n]\n"+
		"rw_binds = [\""+f.root+"/gone-rw\"]\n\n[secrets.files]\nTOKEN = \""+f.root+"/token\"\n")
	check := func(fl config.Flags, want string) {
		t.Helper()
		cfg, _, err := config.Load(config.LoadOptions{Environ: f.environ, UID: 1000, GID: 1000, Flags: fl})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err = f.tryBuild(cfg); !errors.Is(err, ErrConfig) || err.Error() != want {
			t.Errorf("Build: %v\nwant %s", err, want)
		}
	}
	const prefix = "configuration does not fit this host: "
	check(config.Flags{}, prefix+"sandbox.ro_binds ("+user+":4): "+f.root+"/gone-ro does not exist; create it or remove the entry")
	mkdirs(t, f.root+"/gone-ro")
	check(config.Flags{}, prefix+"sandbox.rw_binds ("+user+":6): "+f.root+"/gone-rw does not exist; create it or remove the entry")
	mkdirs(t, f.root+"/gone-rw")
	check(config.Flags{}, prefix+"secrets.files.TOKEN ("+user+":9): "+f.root+"/token cannot be read (stat "+f.root+"/token: no such file or directory); fix the path or remove the entry")
	check(config.Flags{SecretFiles: []string{"KEY=" + f.root + "/key"}}, prefix+"--secret-file KEY="+f.root+"/key: "+f.root+"/key cannot be read (stat "+f.root+"/key: no such file or directory); fix the path or drop the flag")
	check(config.Flags{SecretFiles: []string{"KEY=" + f.home + "/data"}}, prefix+"--secret-file KEY="+f.home+"/data: "+f.home+"/data is not a regular file; name a file or drop the flag")
}
