package tools

import (
	"net/url"
	"strings"
)

// Credential reports whether the environment variable name, with value, is to be
// treated as a credential wherever a variable passed by value would be exposed (a
// docker engine reached over plain TCP): a name a tool of r declares as its secret
// (Tool.Secrets, e.g. GH_TOKEN, ANTHROPIC_API_KEY), a name CredentialName judges one,
// or a value CredentialValue does. It is a judgement on names and forms, so it can
// be wrong both ways; it never looks anything up.
func (r *Registry) Credential(name, value string) bool {
	if r != nil {
		for _, t := range r.tools {
			for _, s := range t.Secrets {
				if s == name {
					return true
				}
			}
		}
	}
	return CredentialName(name) || CredentialValue(value)
}

// notCredentialNames are names CredentialName's words would catch that name no
// credential: the ssh agent's socket path.
var notCredentialNames = map[string]bool{"SSH_AUTH_SOCK": true}

// credentialWords are the words (of a name split at '_', '-', '.', ':' and '/') that
// make it a credential's: NODE_AUTH_TOKEN, DB_PASSWORD, NPM_CONFIG__AUTH, and an
// HTTP header's Authorization (git's http.extraHeader).
var credentialWords = map[string]bool{
	"TOKEN": true, "TOKENS": true, "SECRET": true, "SECRETS": true, "PASSWORD": true, "PASSWD": true,
	"PASSPHRASE": true, "CREDENTIAL": true, "CREDENTIALS": true, "AUTH": true, "AUTHORIZATION": true,
	"APIKEY": true, "PRIVATEKEY": true, "SECRETKEY": true,
}

// credentialSuffixes make a word a credential's when it ends with one: AUTHTOKEN,
// CLIENTSECRET, DBPASSWORD (and npm's _authToken).
var credentialSuffixes = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD"}

// CredentialName reports whether name (case-insensitive) is a credential's by its
// words: one of TOKEN(S), SECRET(S), PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL(S),
// AUTH, AUTHORIZATION, APIKEY, PRIVATEKEY, SECRETKEY; a word ending in TOKEN, SECRET, PASSWORD or
// PASSWD; or the pairs API_KEY and PRIVATE_KEY. Whole words only: GIT_AUTHOR_NAME and
// TOKENIZERS_PARALLELISM are not. SSH_AUTH_SOCK (a socket's path) is not.
func CredentialName(name string) bool {
	up := strings.ToUpper(name)
	if notCredentialNames[up] {
		return false
	}
	words := strings.FieldsFunc(up, func(r rune) bool { return r == '_' || r == '-' || r == '.' || r == ':' || r == '/' })
	for i, w := range words {
		if credentialWords[w] {
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

// CredentialValue reports whether value has a well-known credential's form: one of
// tokenPrefixes followed by at least minTokenTail characters and no white space, a
// PEM private key, or a URL carrying a password (https://user:pass@host), alone or
// in a list separated by commas, bars or white space.
func CredentialValue(value string) bool {
	v := strings.TrimSpace(value)
	if strings.Contains(v, "-----BEGIN ") && strings.Contains(v, "PRIVATE KEY") {
		return true
	}
	if !strings.ContainsAny(v, " \t\n") {
		for _, p := range tokenPrefixes {
			if strings.HasPrefix(v, p) && len(v) >= len(p)+minTokenTail {
				return true
			}
		}
	}
	if !strings.Contains(v, "://") || !strings.Contains(v, "@") {
		return false
	}
	// A list of URLs (GOPROXY's, NO_PROXY-like) is judged URL by URL.
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '|' || r == ' ' || r == '\t' || r == '\n' }) {
		if u, err := url.Parse(f); err == nil && u.User != nil {
			if _, ok := u.User.Password(); ok {
				return true
			}
		}
	}
	return false
}
