package planner

import (
	"errors"
	"os"
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

// A proxy credential's value_file that is missing stops the Plan, so --dry-run stops
// where the run would (the proxy read it only at its start, with an error naming
// neither the file nor a fix); where no proxy runs (egress none), it does not matter.
func TestMissingCredentialFileNamesItsOrigin(t *testing.T) {
	f := newFixture(t)
	user := f.home + "/.config/devsandbox/config.toml"
	writeFile(t, f.home+"/tok-a", "a-token-value\n")
	writeFile(t, user, "[proxy]\nmitm = true\n\n[[proxy.credentials]]\nhost = \"a.example.com\"\nheader = \"Authorization\"\nvalue_file = \""+f.home+"/tok-a\"\n\n"+
		"[[proxy.credentials]]\nhost = \"b.example.com\"\nheader = \"Authorization\"\nvalue_file = \""+f.home+"/tok-b\"\n")
	load := func(fl config.Flags) *config.Config {
		t.Helper()
		cfg, _, err := config.Load(config.LoadOptions{Environ: f.environ, UID: 1000, GID: 1000, Flags: fl})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	want := "configuration does not fit this host: proxy.credentials[1].value_file (" + user + ":12): " + f.home + "/tok-b cannot be read (stat " + f.home + "/tok-b: no such file or directory); fix the path, or remove the credential"
	if _, _, err := f.tryBuild(load(config.Flags{})); !errors.Is(err, ErrConfig) || err.Error() != want {
		t.Errorf("Build: %v\nwant %s", err, want)
	}
	none := "none"
	if _, _, err := f.tryBuild(load(config.Flags{Egress: &none})); err != nil {
		t.Errorf("Build under egress none: %v, want no error (no proxy reads the file)", err)
	}
}

// The other configured paths that must exist on the host name their entry's file
// and line too: a writable_dirs entry and a system_binds entry.
func TestMissingDirNamesItsOrigin(t *testing.T) {
	f := newFixture(t)
	user := f.home + "/.config/devsandbox/config.toml"
	writeFile(t, user, "[sandbox]\nread_only = true\nwritable_dirs = [\n  \"build\",\n]\nsystem_binds = [\"/usr\", \""+f.root+"/no-sys\"]\n")
	cfg, _, err := config.Load(config.LoadOptions{Environ: f.environ, UID: 1000, GID: 1000})
	if err != nil {
		t.Fatal(err)
	}
	mkdirs(t, f.root+"/no-sys")
	want := "configuration does not fit this host: sandbox.writable_dirs (" + user + ":4): " + f.proj + "/build is not a directory of the project (symlinks, also in a parent, are not accepted); create it in the project"
	if _, _, err := f.tryBuild(cfg); !errors.Is(err, ErrConfig) || err.Error() != want {
		t.Errorf("Build: %v\nwant %s", err, want)
	}
	if err := os.Remove(f.root + "/no-sys"); err != nil {
		t.Fatal(err)
	}
	mkdirs(t, f.proj+"/build")
	want = "configuration does not fit this host: sandbox.system_binds (" + user + ":6): " + f.root + "/no-sys does not exist; remove it from the list"
	if _, _, err := f.tryBuild(cfg); !errors.Is(err, ErrConfig) || err.Error() != want {
		t.Errorf("Build: %v\nwant %s", err, want)
	}
}
