package prestart

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	r := baseRecord()
	b, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("decoded\n%+v\nwant\n%+v", got, r)
	}
}

// A record keeps names, never the value of a variable from the host or of a secret:
// the encoder refuses to write one and the decoder to read one.
func TestRecordNeverHoldsValues(t *testing.T) {
	for _, e := range []Env{
		{Name: "GITHUB_TOKEN", Kind: EnvHost, Value: "ghp_secret"},
		{Name: "API_KEY", Kind: EnvSecret, Source: "API_KEY", Value: "s3cr3t"},
	} {
		r := baseRecord()
		r.Env = append(r.Env, e)
		if _, err := Encode(r); !errors.Is(err, ErrRecord) {
			t.Errorf("Encode with %s's value: %v, want ErrRecord", e.Name, err)
		}
		// Written by hand, as a forger would.
		good, _ := Encode(baseRecord())
		forged := bytes.Replace(good, []byte(`"Env":[`), []byte(`"Env":[{"Name":"`+e.Name+`","Kind":"`+string(e.Kind)+`","Source":"X","Value":"`+e.Value+`"},`), 1)
		if _, err := Decode(bytes.NewReader(forged)); !errors.Is(err, ErrRecord) {
			t.Errorf("Decode with %s's value: %v, want ErrRecord", e.Name, err)
		}
	}
	b, err := Encode(baseRecord())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"hunter2", "s3cr3t"} { // the host's values in fakeEnv
		if bytes.Contains(b, []byte(v)) {
			t.Errorf("the record holds the value %q:\n%s", v, b)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	good, err := Encode(baseRecord())
	if err != nil {
		t.Fatal(err)
	}
	edit := func(old, new string) []byte {
		if !bytes.Contains(good, []byte(old)) {
			t.Fatalf("%q not in the record", old)
		}
		return bytes.Replace(good, []byte(old), []byte(new), 1)
	}
	for name, b := range map[string][]byte{
		"another version":   edit(`"Version":2`, `"Version":1`),
		"an unknown field":  edit(`"Version":2`, `"Version":2,"Extra":true`),
		"trailing data":     append(append([]byte{}, good...), []byte(`{}`)...),
		"too large":         append(append([]byte{}, good...), bytes.Repeat([]byte(" "), MaxRecord)...),
		"a malformed key":   edit(`"Key":"0123`, `"Key":"../x`),
		"a relative bwrap":  edit(`"Bwrap":"/usr/bin/bwrap"`, `"Bwrap":"bwrap"`),
		"another program":   edit(`"Argv":["bwrap"`, `"Argv":["sh"`),
		"an unclean tmp":    edit(`"TmpBase":"/home/u/.local/state/devsandbox/app-1/tmp"`, `"TmpBase":"/home/u/.local/state/devsandbox/app-1/../../x/tmp"`),
		"a relative source": edit(`"Path":"/home/u/src/app"`, `"Path":"src/app"`),
		"descriptor order":  edit(`{"FD":6,`, `{"FD":4,`),
		"a data path":       edit(`{"FD":10,"Kind":"data"}`, `{"FD":10,"Kind":"data","Path":"/etc/shadow"}`),
		"an unknown kind":   edit(`{"FD":10,"Kind":"data"}`, `{"FD":10,"Kind":"pipe"}`),
		// A secret's pipe (data) never carries a content: a record that gives it one
		// is not read, so its bytes cannot reach bwrap before the comparison.
		"a data content":      edit(`{"FD":10,"Kind":"data"}`, `{"FD":10,"Kind":"data","Content":"eA=="}`),
		"a seccomp content":   edit(`{"FD":11,"Kind":"seccomp"}`, `{"FD":11,"Kind":"seccomp","Content":"eA=="}`),
		"a source content":    edit(`{"FD":8,"Kind":"source","Path":"/home/u/src/app/.git/hooks"}`, `{"FD":8,"Kind":"source","Path":"/home/u/src/app/.git/hooks","Content":"eA=="}`),
		"a content path":      edit(`{"FD":9,"Kind":"content"`, `{"FD":9,"Kind":"content","Path":"/etc/shadow"`),
		"a content too large": edit(`{"FD":9,"Kind":"content","Content":"`, `{"FD":9,"Kind":"content","Content":"`+strings.Repeat("QUFB", MaxContent/3+1)),
		"a variable twice":    edit(`{"Name":"HOME"`, `{"Name":"TERM"`),
		"a malformed name":    edit(`{"Name":"HOME"`, `{"Name":"HO=ME"`),
		"an unknown variety":  edit(`"Kind":"host"`, `"Kind":"file"`),
	} {
		if _, err := Decode(bytes.NewReader(b)); !errors.Is(err, ErrRecord) {
			t.Errorf("%s: Decode: %v, want ErrRecord", name, err)
		}
	}
}

func TestLaunchKey(t *testing.T) {
	k := LaunchKey(1000, "/home/u/src/app", []string{"-e", "A=1", "--", "true"})
	if len(k) != 32 || strings.Contains(k, "A=1") {
		t.Fatalf("key %q", k)
	}
	for _, other := range []string{
		LaunchKey(1001, "/home/u/src/app", []string{"-e", "A=1", "--", "true"}),
		LaunchKey(1000, "/home/u/src/app2", []string{"-e", "A=1", "--", "true"}),
		LaunchKey(1000, "/home/u/src/app", []string{"-e", "A=1--", "true"}),
		LaunchKey(1000, "/home/u/src/app", []string{"-e", "A=2", "--", "true"}),
	} {
		if other == k {
			t.Errorf("another launch has the same key %s", k)
		}
	}
}

func TestEnviron(t *testing.T) {
	r := baseRecord()
	env, err := r.Environ(fakeEnv)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"HOME=/home/u", "TERM=xterm", "API_KEY=s3cr3t", "GOMAXPROCS=1"}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("Environ = %q, want %q", env, want)
	}
	if _, err := r.Environ(func(string) (string, bool) { return "", false }); !errors.Is(err, ErrMismatch) {
		t.Errorf("Environ without the host's variables: %v, want ErrMismatch", err)
	}
}

func fakeEnv(name string) (string, bool) {
	v, ok := map[string]string{"TERM": "xterm", "HOST_API_KEY": "s3cr3t", "PASSWORD": "hunter2"}[name]
	return v, ok
}
