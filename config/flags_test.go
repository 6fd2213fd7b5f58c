package config

import (
	"errors"
	"reflect"
	"testing"
)

func TestFlagEnv(t *testing.T) {
	_, environ := testHome(t)
	c, _ := mustLoad(t, LoadOptions{Environ: environ, Flags: Flags{
		Env: []string{"A=1", "EMPTY=", "URL=x=y", "TOKEN", "A=2"},
	}})
	if want := map[string]string{"A": "2", "EMPTY": "", "URL": "x=y"}; !reflect.DeepEqual(c.Env.Set, want) {
		t.Errorf("env.set = %q, want %q", c.Env.Set, want)
	}
	if want := []string{"TOKEN"}; !reflect.DeepEqual(c.Secrets.Env, want) {
		t.Errorf("secrets.env = %q, want %q", c.Secrets.Env, want)
	}
}

func TestFlagSecretFile(t *testing.T) {
	home, environ := testHome(t)
	c, _ := mustLoad(t, LoadOptions{Environ: environ, Flags: Flags{
		SecretFiles: []string{"TOKEN=~/t", "KEY=/etc/key=1"},
	}})
	want := map[string]string{"TOKEN": home + "/t", "KEY": "/etc/key=1"}
	if !reflect.DeepEqual(c.Secrets.Files, want) {
		t.Errorf("secrets.files = %q, want %q", c.Secrets.Files, want)
	}
	if c.Origins["secrets.files.TOKEN"] != "flag --secret-file" {
		t.Errorf("origin %q", c.Origins["secrets.files.TOKEN"])
	}
}

func TestFlagMount(t *testing.T) {
	home := "/h"
	tests := []struct {
		in   string
		want Mount
	}{
		{"/a", Mount{Source: "/a", Dest: "/a"}},
		{"/a:ro", Mount{Source: "/a", Dest: "/a", ReadOnly: true}},
		{"/a:rw", Mount{Source: "/a", Dest: "/a"}},
		{"/a:/b", Mount{Source: "/a", Dest: "/b"}},
		{"/a:/b:ro", Mount{Source: "/a", Dest: "/b", ReadOnly: true}},
		{"/a/:/b/c/..:rw", Mount{Source: "/a", Dest: "/b"}},
		{"~/src:~", Mount{Source: "/h/src", Dest: "/h"}},
	}
	for _, tt := range tests {
		got, err := parseMount(tt.in, home, true)
		if err != nil || got != tt.want {
			t.Errorf("parseMount(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "rel", "/a:", ":/b", "/a:/b:rx", "/a:/b:ro:x", "/a:rel", "~x:/b"} {
		if _, err := parseMount(in, home, true); !errors.Is(err, ErrInvalid) {
			t.Errorf("parseMount(%q) = %v, want ErrInvalid", in, err)
		}
	}
	_, environ := testHome(t)
	c, _ := mustLoad(t, LoadOptions{Environ: environ, Flags: Flags{Mounts: []string{"/a:/b:ro", "/a:/b:ro", "/c"}}})
	want := []Mount{{Source: "/a", Dest: "/b", ReadOnly: true, Origin: "flag --mount"}, {Source: "/c", Dest: "/c", Origin: "flag --mount"}}
	if !reflect.DeepEqual(c.Sandbox.HostMounts, want) || c.Origins["sandbox.host_mounts"] != "flag --mount" {
		t.Errorf("host mounts %+v from %q", c.Sandbox.HostMounts, c.Origins["sandbox.host_mounts"])
	}
}

func TestFlagErrors(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name    string
		flags   Flags
		env     []string
		source  string
		key     string
		notImpl bool
	}{
		{"isolator", Flags{Isolator: str("vm")}, nil, "flag --isolator", "isolator", false},
		{"mode", Flags{Mode: str("strict")}, nil, "flag --mode", "sandbox.mode", false},
		{"egress", Flags{Egress: str("closed")}, nil, "flag --egress", "egress.mode", false},
		{"egress mode", Flags{Egress: str("vpn")}, nil, "flag --egress", "egress.mode", false},
		{"allow", Flags{Allow: []string{"a.com", "bad host"}}, nil, "flag --allow", "egress.allow", false},
		{"env name", Flags{Env: []string{"1A=b"}}, nil, "flag --env", "env.set.1A", false},
		{"env secret name", Flags{Env: []string{"A-B"}}, nil, "flag --env", "secrets.env", false},
		{"secret file form", Flags{SecretFiles: []string{"TOKEN"}}, nil, "flag --secret-file", "secrets.files", false},
		{"secret file path", Flags{SecretFiles: []string{"TOKEN=t"}}, nil, "flag --secret-file", "secrets.files.TOKEN", false},
		{"mount", Flags{Mounts: []string{"rel"}}, nil, "flag --mount", "sandbox.host_mounts", false},
		{"image", Flags{Image: str("")}, nil, "flag --image", "docker.image", false},
		{"env var", Flags{}, []string{"DEVSANDBOX_ISOLATOR=vm"}, "env DEVSANDBOX_ISOLATOR", "isolator", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, environ := testHome(t, tt.env...)
			_, _, err := Load(LoadOptions{Environ: environ, Flags: tt.flags})
			ce := asConfigError(t, err)
			if ce.Source != tt.source || ce.Key != tt.key || ce.File != "" || ce.Line != 0 {
				t.Errorf("got Source %q Key %q File %q Line %d, want %q %q", ce.Source, ce.Key, ce.File, ce.Line, tt.source, tt.key)
			}
			if !errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotImplemented) != tt.notImpl {
				t.Errorf("%v: ErrInvalid %v, ErrNotImplemented %v", err, errors.Is(err, ErrInvalid), errors.Is(err, ErrNotImplemented))
			}
		})
	}
}

// Each sandbox.host_mounts entry keeps where it came from: its own line in the file
// that gave it, or the --mount flag, however many layers gave entries (the key's
// Origins entry names only the last). A mount two layers give keeps the first's.
func TestHostMountOrigins(t *testing.T) {
	home, environ := testHome(t)
	user := writeUserFile(t, home, "[sandbox]\nhost_mounts = [\n  \"/a:/b:ro\",\n  \"/c:/d\",\n]\n")
	c, _ := mustLoad(t, LoadOptions{Environ: environ, Flags: Flags{Mounts: []string{"/e", "/c:/d"}}})
	want := []Mount{
		{Source: "/a", Dest: "/b", ReadOnly: true, Origin: user + ":3"},
		{Source: "/c", Dest: "/d", Origin: user + ":4"},
		{Source: "/e", Dest: "/e", Origin: "flag --mount"},
	}
	if !reflect.DeepEqual(c.Sandbox.HostMounts, want) {
		t.Errorf("host mounts\n%+v\nwant\n%+v", c.Sandbox.HostMounts, want)
	}
}

// Where names the file and line of a [tools.<name>] table, written as a table or as
// dotted keys, for checks made outside this package (an unknown tool's name).
func TestWhereTools(t *testing.T) {
	home, environ := testHome(t)
	user := writeUserFile(t, home, "isolator = \"auto\"\ntools.nosuch.enabled = false\n\n[tools.claud]\nsecrets = false\n")
	c, _ := mustLoad(t, LoadOptions{Environ: environ})
	for key, line := range map[string]int{"tools.nosuch": 2, "tools.claud": 4} {
		if f, l, ok := c.Where(key); !ok || f != user || l != line {
			t.Errorf("Where(%q) = %q, %d, %v; want %q, %d", key, f, l, ok, user, line)
		}
	}
	if _, _, ok := c.Where("tools.git"); ok {
		t.Error("Where names a key no file gave")
	}
}
