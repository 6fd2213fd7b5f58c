package engineaddr

import (
	"fmt"
	"path"
	"strings"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/gitconfig"
	"github.com/devsandbox/devsandbox/tools/credential"
)

// ClearFiles lists the files a run of p sends the engine by content that hold what
// package credential's judgement takes for a credential, each as "FILE (WHERE, …)", names only,
// never a value. p is the plan as the engine gets it: every isolator.Data mount
// crosses as content (the read-only copies of the files a sandbox could swap, which
// an engine that is not this host's cannot be given by path: the git config, the
// files it includes, .devsandbox.toml, the files host tools run; a tool's generated
// files). A git config (isolator.WhyGitConfig, WhyGitInclude, a config.worktree) is
// read as git reads it (gitconfig.Credentials: a remote URL with a password, an
// Authorization extraHeader, a token's variable; one git would not read is read as
// any other file), any other file line by line (credential.In). Volatile data
// (the resolved names of /etc/hosts) is devsandbox's own.
func ClearFiles(p *isolator.Plan) []string {
	var out []string
	for _, m := range p.Mounts {
		if m.Kind != isolator.Data || m.Volatile {
			continue
		}
		f := m.Target(p.User.HostHome)
		var where []string
		if gitSyntax(m, f) {
			if es, err := gitconfig.Parse(m.Content); err == nil {
				where = gitconfig.Credentials(es, gitCredential)
			} else {
				where = credential.In(m.Content, credential.SyntaxOf(f, m.Content))
			}
		} else {
			where = credential.In(m.Content, credential.SyntaxOf(f, m.Content))
		}
		if len(where) > 0 {
			out = append(out, f+" ("+strings.Join(where, ", ")+")")
		}
	}
	return out
}

// gitSyntax reports whether m, at f, is a git config file.
func gitSyntax(m isolator.Mount, f string) bool {
	return m.Why == isolator.WhyGitConfig || m.Why == isolator.WhyGitInclude || path.Base(f) == "config.worktree"
}

// gitCredential is package credential's judgement of a git variable's name and value, the value
// also read as text (an inline credential helper's "password=…"). A value judged by
// its name must be credential.Literal, as in any file sent: git expands nothing, so
// github.token = ${GH_TOKEN} holds no token, and an empty one holds nothing.
func gitCredential(name, value string) bool {
	return credential.Name(name) && credential.Literal(value) || credential.Value(value) || name != "" && len(credential.In([]byte(value), credential.Text)) > 0
}

// ClearFilesFix is what to do about a credential in a file sent in clear, besides
// protecting the channel (ClearFix).
const ClearFilesFix = "or take the credential out of the file: for git, keep it in a credential helper (git config credential.helper), not in a remote URL or an http.extraHeader of the repository's config"

// RefuseClearFiles refuses (wraps isolator.ErrProtection: 125) a run of p whose files
// sent by content hold a credential (ClearFiles) when a reaches the engine over plain
// TCP at a non-loopback address; over any other channel it returns nil without
// reading anything. It names each file and the keys, never a value.
func (a Address) RefuseClearFiles(p *isolator.Plan) error {
	if a.Channel() != Clear {
		return nil
	}
	x := ClearFiles(p)
	if len(x) == 0 {
		return nil
	}
	return fmt.Errorf("%w: the docker engine at %s (%s) is reached over plain TCP, unencrypted and unauthenticated, and this run would send it the content of %s, taken for a credential, in clear, for anyone on the way to read; %s; %s",
		isolator.ErrProtection, a.Host, a.Origin, strings.Join(x, "; "), ClearFix, ClearFilesFix)
}
