package gitconfig

import (
	"reflect"
	"strings"
	"testing"
)

// judgeSecret stands for the caller's judgement: a name with "token", or a value
// holding "SECRET".
func judgeSecret(name, value string) bool {
	return strings.Contains(strings.ToLower(name), "token") || strings.Contains(value, "SECRET")
}

// Credentials reads each variable as git does (sections, quoted and old-style
// subsections, quoting, escapes, continuation lines, comments) and names where a
// credential is, redacting a subsection that holds one; include.path is a path, an
// extraHeader a header.
func TestCredentials(t *testing.T) {
	doc := "# SECRET in a comment is no variable\n" +
		"[core]\n\trepositoryformatversion = 0\n" +
		"[remote \"origin\"]\n\turl = \"https://u:SEC\\\nRET@host/r.git\" ; a continuation inside quotes\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n" +
		"[Remote.Fork] URL = https://host/fork.git\n" + // old-style subsection, no credential
		"[include]\n\tpath = ../SECRET-named.inc\n" + // judged as any value: the caller's judgement decides
		"[includeIf \"gitdir:~/work/\"]\n\tpath = ~/work.inc\n" +
		"[url \"https://u:SECRET@host/\"]\n\tinsteadOf = https://host/\n" +
		"[http \"https://host/\"]\n\textraHeader = Authorization: Bearer SECRET\n\textraHeader = X-Trace: 1\n" +
		"[github]\n\ttoken = opaque\n\tToken\n" + // the second, written without "=", holds nothing
		"[hub]\n\toauthtoken = \"\"\n"
	es, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	got := Credentials(es, judgeSecret)
	want := []string{"remote.origin.url", "include.path", "url.<…>.insteadof", "http.https://host/.extraheader", "github.token"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Credentials:\n got %q\nwant %q", got, want)
	}
	for _, k := range got {
		if strings.Contains(k, "SECRET") {
			t.Errorf("a key holds the credential: %q", k)
		}
	}

	// An extraHeader is judged as the header: by its name, then by its value.
	header := func(name, value string) bool { return name == "Authorization" || value == "SECRET" }
	es, err = Parse([]byte("[http]\n\textraheader = \"Authorization: Basic x\"\n[http \"https://a/\"]\n\textraHeader = Private-Token:SECRET\n[http \"https://b/\"]\n\textraHeader = X-Trace: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Credentials(es, header), []string{"http.extraheader", "http.https://a/.extraheader"}; !reflect.DeepEqual(got, want) {
		t.Errorf("extraHeader: %q, want %q", got, want)
	}
}
