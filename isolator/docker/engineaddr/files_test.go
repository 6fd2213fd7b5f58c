package engineaddr

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/gitconfig"
)

// gitConfigDoc is a repository's config with a credential in each place git keeps
// one, around variables that hold none.
const gitConfigDoc = "[core]\n\trepositoryformatversion = 0\n\tsshCommand = ssh -i ~/.ssh/work\n" +
	"[remote \"origin\"]\n\turl = https://dsb:ghp_0123456789abcdef\\\nXYZ@github.com/o/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n" +
	"[remote \"plain\"]\n\turl = https://github.com/o/r.git\n" +
	"[remote \"gh\"]\n\turl = https://ghp_0123456789abcdefXYZ@github.com/o/r.git\n" + // a token as the user
	"[include]\n\tpath = ../team.gitconfig\n" +
	"[credential]\n\thelper = store --file=/home/u/.git-credentials\n\tusername = dsb\n" +
	"[credential \"https://ci.example\"]\n\thelper = \"!f() { echo username=ci; echo password=opaque; }; f\"\n" +
	"[http \"https://git.example/\"]\n\textraHeader = \"Authorization: Basic ZHNiOm9wYXF1ZQ==\"\n\textraHeader = X-Trace: 1\n" +
	"[url \"https://dsb:opaque@git.example/\"]\n\tinsteadOf = https://git.example/\n" +
	"[hub]\n\toauthtoken = opaque\n"

// ClearFiles reads a git config as git does and names each key that holds a
// credential by tools' judgement (never the value); any other file sent by content
// line by line; a config git would not read as text; volatile data and a
// certificate bundle hold none.
func TestClearFiles(t *testing.T) {
	const proj = "/p/proj"
	data := func(dest, why, content string) isolator.Mount {
		return isolator.Mount{Kind: isolator.Data, Dest: dest, Why: why, Content: []byte(content)}
	}
	p := &isolator.Plan{User: isolator.User{HostHome: "/home/u"}, Mounts: []isolator.Mount{
		{Kind: isolator.Bind, Source: proj, Dest: proj},
		data(proj+"/.git/config", isolator.WhyGitConfig, gitConfigDoc),
		data(proj+"/team.gitconfig", isolator.WhyGitInclude, "[github]\n\ttoken = opaque\n[user]\n\tname = D\n"),
		data(proj+"/.git/worktrees/w/config.worktree", "a linked worktree's pointer", "[remote \"x\"]\n\turl = https://a:b@h/r\n"),
		data(proj+"/.git/modules/m/config", isolator.WhyGitConfig, "[remote \"x\"\n\turl = https://a:b@h/r\n"), // git refuses it: read as text
		data(proj+"/.envrc", "run by tools on the host", "export GH_TOKEN=opaque\nexport DB_PASSWORD=\"pa$word\"\n"),
		// Outside a shell file pa$word is a password; a password on a command line
		// is found by its option.
		data(proj+"/mise.toml", "run by tools on the host", "[env]\nDB_PASSWORD = \"pa$word\"\n"),
		data(proj+"/.vscode/tasks.json", "run by tools on the host", `{"tasks": [{"command": "sshpass -p hunter2 ssh h"}]}`),
		data(proj+"/.devsandbox.toml", "project config", "[tools.gh]\nsecrets = true\n[secrets]\nenv = [\"GH_TOKEN\"]\n"),
		{Kind: isolator.Data, HomeRel: ".ssh/config", Why: "tool ssh", Content: []byte("Host *\n  IdentityFile ~/.ssh/id\n")},
		data("/etc/ssl/certs/ca-certificates.crt", "CA bundle", "-----BEGIN CERTIFICATE-----\nAKIA0123456789ABCDEFGH\n-----END CERTIFICATE-----\n"),
		{Kind: isolator.Data, Dest: "/etc/hosts", Volatile: true, Content: []byte("10.0.0.1 https://a:b@h\n")},
	}}
	want := []string{
		proj + "/.git/config (remote.origin.url, remote.gh.url, credential.https://ci.example.helper, http.https://git.example/.extraheader, url.<…>.insteadof, hub.oauthtoken)",
		proj + "/team.gitconfig (github.token)",
		proj + "/.git/worktrees/w/config.worktree (remote.x.url)",
		proj + "/.git/modules/m/config (url (line 2))",
		proj + "/.envrc (GH_TOKEN (line 1))",
		proj + "/mise.toml (DB_PASSWORD (line 2))",
		proj + "/.vscode/tasks.json (sshpass -p (line 1))",
	}
	got := ClearFiles(p)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ClearFiles:\n got %q\nwant %q", got, want)
	}
	for _, s := range got {
		if strings.Contains(s, "opaque") || strings.Contains(s, "ghp_") || strings.Contains(s, "word") || strings.Contains(s, "hunter2") {
			t.Errorf("a credential's value in %q", s)
		}
	}
}

// Only plain TCP to another machine refuses a file holding a credential; every
// other channel passes without reading the files.
func TestRefuseClearFiles(t *testing.T) {
	cfg := "/p/proj/.git/config"
	p := &isolator.Plan{Mounts: []isolator.Mount{{Kind: isolator.Data, Dest: cfg, Why: isolator.WhyGitConfig, Content: []byte(gitConfigDoc)}}}
	for _, tc := range []struct {
		a       Address
		refused bool
	}{
		{Address{Host: "tcp://10.0.0.2:2375", Origin: "DOCKER_HOST"}, true},
		{Address{Host: "tcp://127.0.0.1:2375", Origin: "DOCKER_HOST"}, false},
		{Address{Host: "tcp://10.0.0.2:2376", Origin: "DOCKER_HOST", TLS: "DOCKER_CERT_PATH /c"}, false},
		{Address{Host: "unix:///run/docker.sock", Origin: "default"}, false},
	} {
		err := tc.a.RefuseClearFiles(p)
		if tc.refused != (err != nil) || tc.refused && !errors.Is(err, isolator.ErrProtection) {
			t.Fatalf("%s: RefuseClearFiles: %v; want refused %v (ErrProtection)", tc.a.Host, err, tc.refused)
		}
		if err == nil {
			continue
		}
		want := "protection could not be applied: the docker engine at tcp://10.0.0.2:2375 (DOCKER_HOST) is reached over plain TCP, unencrypted and unauthenticated, and this run would send it the content of " +
			cfg + " (remote.origin.url, remote.gh.url, credential.https://ci.example.helper, http.https://git.example/.extraheader, url.<…>.insteadof, hub.oauthtoken), taken for a credential, in clear, for anyone on the way to read; " + ClearFix + "; " + ClearFilesFix
		if err.Error() != want {
			t.Errorf("refusal:\n%v\nwant\n%s", err, want)
		}
	}
	if err := (Address{Host: "tcp://10.0.0.2:2375"}).RefuseClearFiles(&isolator.Plan{}); err != nil {
		t.Errorf("a plan without files: %v", err)
	}
}

// A git config's variables as git keeps them, judged by package credential: the
// keys that hold a secret (git-config(1)'s sendemail.smtpPass and imap.pass, a
// proxy URL with a password, a token in a URL's query, in a remote URL or in the
// base of a url.<base>.insteadOf) and the ones that hold none (a user name, a
// cookie file's path, an ssh key's path in core.sshCommand, a variable that
// refers to another, an empty one, an inline helper that reads the password from
// the environment).
func TestGitCredential(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"sendemail.smtpPass", "[sendemail]\n\tsmtpServer = smtp.example\n\tsmtpUser = dsb\n\tsmtpPass = hunter2\n", []string{"sendemail.smtppass"}},
		{"imap.pass", "[imap]\n\tuser = dsb\n\tpass = hunter2\n", []string{"imap.pass"}},
		{"proxy with a password", "[http]\n\tproxy = http://dsb:hunter2@proxy.example:3128\n", []string{"http.proxy"}},
		{"query in a remote URL", "[remote \"o\"]\n\turl = https://git.example/o/r.git?private_token=opaque\n", []string{"remote.o.url"}},
		{"presigned URL", "[lfs]\n\turl = https://b.example/lfs?sv=1&sig=0paque%2Bsig%3D\n", []string{"lfs.url"}},
		{"query in insteadOf's base", "[url \"https://git.example/?private_token=opaque&x=\"]\n\tinsteadOf = https://git.example/\n", []string{"url.<…>.insteadof"}},
		{"token in an extraHeader", "[http]\n\textraHeader = X-Api-Key: opaque\n", []string{"http.extraheader"}},
		{"password in sshCommand", "[core]\n\tsshCommand = sshpass -p hunter2 ssh\n", []string{"core.sshcommand"}},
		{"no secret", "[credential \"https://git.example\"]\n\tusername = dsb\n\thelper = cache --timeout=3600\n[http]\n\tcookieFile = ~/.gitcookies\n\tsslKey = /home/u/.ssl/key.pem\n" +
			"[core]\n\tsshCommand = ssh -i ~/.ssh/work -o IdentitiesOnly=yes\n[user]\n\tsigningKey = 0xABCDEF0123456789\n", nil},
		{"references and empty values", "[github]\n\ttoken = ${GH_TOKEN}\n[hub]\n\toauthtoken =\n[http]\n\textraHeader = Authorization: Bearer $TOKEN\n" +
			"[credential]\n\thelper = \"!f() { echo username=ci; echo password=$CI_PASSWORD; }; f\"\n", nil},
	} {
		es, err := gitconfig.Parse([]byte(tc.doc))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := gitconfig.Credentials(es, gitCredential); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
