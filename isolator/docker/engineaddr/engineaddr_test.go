package engineaddr

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// writeContext makes docker CLI context name, with endpoint host, under cfgDir.
func writeContext(t *testing.T, cfgDir, name, host string) {
	t.Helper()
	sum := sha256.Sum256([]byte(name))
	dir := filepath.Join(cfgDir, "contexts", "meta", hex.EncodeToString(sum[:]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	meta := `{"Name":"` + name + `","Endpoints":{"docker":{"Host":"` + host + `","SkipTLSVerify":false}}}`
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte(meta), 0o600); err != nil {
		t.Fatal(err)
	}
}

// An address from DOCKER_HOST or a docker context is judged as docker.host is
// (internal/enginehost), with the fix phrased for where it came from; docker.host
// itself was judged when the configuration was loaded.
func TestResolveJudgesTheAddress(t *testing.T) {
	home := t.TempDir()
	cfgDir := filepath.Join(home, ".docker")
	writeContext(t, cfgDir, "remote", "ssh://me@build")
	writeContext(t, cfgDir, "local", "unix:///run/user/1000/docker.sock")
	cases := []struct {
		name string
		env  map[string]string
		want Address
		err  string
	}{
		{"DOCKER_HOST over ssh", map[string]string{"DOCKER_HOST": "ssh://me@build"}, Address{},
			`env DOCKER_HOST: "ssh://me@build": devsandbox does not speak to an engine over ssh; forward its socket (ssh -nNT -L /ABSOLUTE/SOCKET:/var/run/docker.sock HOST) and set DOCKER_HOST=unix:///ABSOLUTE/SOCKET`},
		{"DOCKER_HOST of another scheme", map[string]string{"DOCKER_HOST": "http://x"}, Address{},
			`env DOCKER_HOST: "http://x" is not an engine address: use unix:///PATH or tcp://HOST:PORT`},
		{"DOCKER_HOST over tcp", map[string]string{"DOCKER_HOST": "tcp://10.0.0.2:2376"}, Address{Host: "tcp://10.0.0.2:2376", Origin: "DOCKER_HOST"}, ""},
		{"a context over ssh", map[string]string{"DOCKER_CONTEXT": "remote"}, Address{},
			`docker context "remote": "ssh://me@build": devsandbox does not speak to an engine over ssh; forward its socket (ssh -nNT -L /ABSOLUTE/SOCKET:/var/run/docker.sock HOST) and set docker.host = "unix:///ABSOLUTE/SOCKET"`},
		{"a local context", map[string]string{"DOCKER_CONTEXT": "local"}, Address{Host: "unix:///run/user/1000/docker.sock", Origin: "context local"}, ""},
		{"nothing set", map[string]string{}, Address{Host: DefaultHost, Origin: "default"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Resolve("", tc.env, home)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("Resolve: %v\nwant %s", err, tc.err)
				}
				return
			}
			if err != nil || a != tc.want {
				t.Errorf("Resolve: %+v, %v; want %+v", a, err, tc.want)
			}
		})
	}
}
