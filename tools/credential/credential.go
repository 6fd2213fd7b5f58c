// Package credential is the one judgement of what is a credential, by a name and by
// a value's form, wherever something devsandbox passes on would be exposed (a
// docker engine reached over plain TCP): the variables passed by value
// (tools.Registry.Credential adds the tools' declared secret names) and the files a
// remote engine is sent by content (In). It is a judgement on names and forms, so it
// can be wrong both ways; it never looks anything up. It imports nothing of
// devsandbox's: the docker backend links it without the tool registry.
package credential

import (
	"net/url"
	"slices"
	"strings"
)

// notCredentialNames are names Name's words would catch that name no
// credential: the ssh agent's socket path. Slices, not maps: a map literal is built
// by the package's init, at every start of each program that links it.
var notCredentialNames = []string{"SSH_AUTH_SOCK"}

// credentialWords are the words (of a name split at '_', '-', '.', ':' and '/') that
// make it a credential's: NODE_AUTH_TOKEN, DB_PASSWORD, NPM_CONFIG__AUTH, and an
// HTTP header's Authorization (git's http.extraHeader).
var credentialWords = []string{
	"TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWD",
	"PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "AUTH", "AUTHORIZATION",
	"APIKEY", "PRIVATEKEY", "SECRETKEY",
}

// credentialSuffixes make a word a credential's when it ends with one: AUTHTOKEN,
// CLIENTSECRET, DBPASSWORD (and npm's _authToken).
var credentialSuffixes = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD"}

// Name reports whether name (case-insensitive) is a credential's by its
// words: one of TOKEN(S), SECRET(S), PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL(S),
// AUTH, AUTHORIZATION, APIKEY, PRIVATEKEY, SECRETKEY; a word ending in TOKEN,
// SECRET, PASSWORD or PASSWD; or the pairs API_KEY and PRIVATE_KEY. Whole words
// only: GIT_AUTHOR_NAME and TOKENIZERS_PARALLELISM are not. SSH_AUTH_SOCK (a
// socket's path) is not.
func Name(name string) bool {
	up := strings.ToUpper(name)
	if slices.Contains(notCredentialNames, up) {
		return false
	}
	words := strings.FieldsFunc(up, func(r rune) bool { return r == '_' || r == '-' || r == '.' || r == ':' || r == '/' })
	for i, w := range words {
		if slices.Contains(credentialWords, w) {
			return true
		}
		for _, s := range credentialSuffixes {
			if strings.HasSuffix(w, s) {
				return true
			}
		}
		if w == "KEY" && i > 0 && (words[i-1] == "API" || words[i-1] == "PRIVATE") {
			return true
		}
	}
	return false
}

// tokenPrefixes begin well-known tokens: GitHub's (classic and fine-grained), GitLab's,
// OpenAI's and Anthropic's (sk-), Slack's, AWS access key ids, Google API keys,
// npm's and Hugging Face's.
var tokenPrefixes = []string{
	"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "sk-",
	"xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xapp-", "AKIA", "ASIA", "AIza", "npm_", "hf_",
}

// minTokenTail is how many characters must follow a token prefix: "sk-SK" or
// "npm_config" are not tokens.
const minTokenTail = 16

// Value reports whether value has a well-known credential's form: one of
// tokenPrefixes followed by at least minTokenTail characters and no white space, a
// PEM private key, or a URL carrying a password (https://user:pass@host) or a
// token as its user (https://ghp_…@github.com, which GitHub takes), alone or in a
// list separated by commas, bars or white space.
func Value(value string) bool {
	v := strings.TrimSpace(value)
	if strings.Contains(v, "-----BEGIN ") && strings.Contains(v, "PRIVATE KEY") {
		return true
	}
	if !strings.ContainsAny(v, " \t\n") && token(v) {
		return true
	}
	if !strings.Contains(v, "://") || !strings.Contains(v, "@") {
		return false
	}
	// A list of URLs (GOPROXY's, NO_PROXY-like) is judged URL by URL.
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '|' || r == ' ' || r == '\t' || r == '\n' }) {
		if u, err := url.Parse(f); err == nil && u.User != nil {
			if _, ok := u.User.Password(); ok || token(u.User.Username()) {
				return true
			}
		}
	}
	return false
}

// token reports whether v begins with one of tokenPrefixes followed by at least
// minTokenTail characters.
func token(v string) bool {
	for _, p := range tokenPrefixes {
		if strings.HasPrefix(v, p) && len(v) >= len(p)+minTokenTail {
			return true
		}
	}
	return false
}
