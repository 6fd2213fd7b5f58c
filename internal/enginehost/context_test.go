package enginehost

import (
	"os"
	"path/filepath"
	"testing"
)

// writeContext makes docker CLI context name, with endpoint host, under dir, as the
// docker CLI lays it out (contexts/meta/<sha256 of the name>/meta.json).
func writeContext(t *testing.T, dir, name, host string) {
	t.Helper()
	meta := filepath.Join(dir, "contexts", "meta", ContextID(name))
	if err := os.MkdirAll(meta, 0o700); err != nil {
		t.Fatal(err)
	}
	doc := `{"Name":"` + name + `","Endpoints":{"docker":{"Host":"` + host + `","SkipTLSVerify":false}}}`
	if err := os.WriteFile(filepath.Join(meta, "meta.json"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The context in use is DOCKER_CONTEXT, else config.json's currentContext, in
// DOCKER_CONFIG or ~/.docker; "default" is none. Its endpoint is judged as docker.host is.
func TestContext(t *testing.T) {
	home := t.TempDir()
	dotDocker, other := filepath.Join(home, ".docker"), t.TempDir()
	writeContext(t, dotDocker, "remote", "ssh://me@build")
	writeContext(t, dotDocker, "local", "unix:///run/user/1000/docker.sock")
	if err := os.WriteFile(filepath.Join(dotDocker, "config.json"), []byte(`{"currentContext":"remote"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name           string
		env            map[string]string
		ctx, dir, host string
		err            string
	}{
		{"config.json's current context", map[string]string{}, "remote", dotDocker, "",
			`"ssh://me@build": devsandbox does not speak to an engine over ssh; forward its socket (ssh -nNT -L /ABSOLUTE/SOCKET:/var/run/docker.sock HOST) and set docker.host = "unix:///ABSOLUTE/SOCKET"`},
		{"DOCKER_CONTEXT wins", map[string]string{"DOCKER_CONTEXT": "local"}, "local", dotDocker, "unix:///run/user/1000/docker.sock", ""},
		{"DOCKER_CONTEXT=default", map[string]string{"DOCKER_CONTEXT": "default"}, "", dotDocker, "", ""},
		{"DOCKER_CONFIG elsewhere, no config.json", map[string]string{"DOCKER_CONFIG": other}, "", other, "", ""},
		{"a context that is not there", map[string]string{"DOCKER_CONTEXT": "gone"}, "gone", dotDocker, "",
			"open " + filepath.Join(dotDocker, "contexts", "meta", ContextID("gone"), "meta.json") + ": no such file or directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name, dir := Context(tc.env, home)
			if name != tc.ctx || dir != tc.dir {
				t.Fatalf("Context = %q, %q; want %q, %q", name, dir, tc.ctx, tc.dir)
			}
			if name == "" {
				return
			}
			host, err := ContextHost(dir, name)
			switch {
			case tc.err != "" && (err == nil || err.Error() != tc.err):
				t.Errorf("ContextHost: %q, %v\nwant %s", host, err, tc.err)
			case tc.err == "" && (err != nil || host != tc.host):
				t.Errorf("ContextHost: %q, %v; want %q", host, err, tc.host)
			}
		})
	}
}
