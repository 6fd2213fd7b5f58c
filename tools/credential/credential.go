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
	"time"
)

// notCredentialNames are names Name's words would catch that name no
// credential: the ssh agent's socket path. Slices, not maps: a map literal is built
// by the package's init, at every start of each program that links it.
var notCredentialNames = []string{"SSH_AUTH_SOCK"}

// credentialWords are the words (of a name split at '_', '-', '.', ':' and '/') that
// make it a credential's: NODE_AUTH_TOKEN, DB_PASSWORD, NPM_CONFIG__AUTH, an HTTP
// header's Authorization (git's http.extraHeader), git's sendemail.smtpPass (git
// lowercases a variable's name), Azure's connection strings' AccountKey and
// SharedAccessKey.
var credentialWords = []string{
	"TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWD",
	"PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "AUTH", "AUTHORIZATION",
	"APIKEY", "PRIVATEKEY", "SECRETKEY", "SMTPPASS", "ACCOUNTKEY", "SHAREDACCESSKEY",
}

// lastWords make a name a credential's only as its last word: PASS (DB_PASS,
// git's imap.pass; PASS_THROUGH is not), and PWD after another word (MYSQL_PWD,
// which the mysql client reads; PWD alone is the working directory).
var lastWords = []string{"PASS", "PWD"}

// credentialSuffixes make a word a credential's when it ends with one: AUTHTOKEN,
// CLIENTSECRET, DBPASSWORD (and npm's _authToken).
var credentialSuffixes = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD"}

// Name reports whether name (case-insensitive) is a credential's by its
// words: one of TOKEN(S), SECRET(S), PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL(S),
// AUTH, AUTHORIZATION, APIKEY, PRIVATEKEY, SECRETKEY, SMTPPASS, ACCOUNTKEY,
// SHAREDACCESSKEY; a word ending in TOKEN, SECRET, PASSWORD or PASSWD; the pairs
// API_KEY and PRIVATE_KEY; PASS or PWD as the last of two or more words, PASS
// alone too. Whole words only: GIT_AUTHOR_NAME, TOKENIZERS_PARALLELISM, BYPASS and
// PASS_THROUGH are not. SSH_AUTH_SOCK (a socket's path) is not.
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
		if i == len(words)-1 && slices.Contains(lastWords, w) && (i > 0 || w == "PASS") {
			return true
		}
	}
	return false
}

// tokenPrefixes begin well-known tokens: GitHub's (classic and fine-grained),
// GitLab's (personal, deploy, runner, trigger, OAuth application, CI job), Anthropic's
// (sk-ant-), Slack's (and its refresh tokens, xoxe.), Google API keys and OAuth access
// tokens (ya29.), npm's, Hugging Face's, Stripe's, Docker Hub's, PyPI's,
// DigitalOcean's, Shopify's, age's secret keys, Linear's, Sentry's, Grafana's and
// Postman's. Each as its issuer documents it; a prefix alone (sk_live_) is no token.
// The prefixes that also begin ordinary words are shapes (tokenShapes).
var tokenPrefixes = []string{
	"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
	"glpat-", "gldt-", "glrt-", "glptt-", "gloas-", "glcbt-", "sk-ant-",
	"xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xoxe.", "xoxe-", "xapp-", "AIza", "ya29.", "npm_", "hf_",
	"sk_live_", "sk_test_", "rk_live_", "rk_test_", "dckr_pat_", "pypi-AgE", "dop_v1_", "doo_v1_",
	"shpat_", "shpss_", "shpca_", "AGE-SECRET-KEY-1", "lin_api_", "sntrys_", "glc_", "glsa_", "PMAK-",
}

// minTokenTail is how many characters must follow a token prefix: "sk-SK" or
// "npm_config" are not tokens.
const minTokenTail = 16

// tokenShapes are the tokens whose prefix also begins ordinary words and names
// (SG.Config, hvs.example.host, sk-learn-…, ASIA_PACIFIC): the token is the prefix
// followed by the issuer's shape. An AWS access key id is 16 upper-case letters and
// digits after AKIA or ASIA; a SendGrid key 22 and 43 base64url characters
// separated by a dot; a Vault service or batch token (hvs., hvb.) at least 24
// base62 characters; an OpenAI key (sk-, sk-proj-…) at least minTokenTail. The
// base62 and base64url tails hold a digit (a word has none).
var tokenShapes = []struct {
	prefix      string
	tail, exact int  // at least tail characters; exact: that many, or 0
	upper       bool // upper-case letters and digits only
	dotAt       int  // 0, or where the tail holds its one '.'
	digit       bool // the tail holds a digit
}{
	{prefix: "AKIA", exact: 16, upper: true},
	{prefix: "ASIA", exact: 16, upper: true},
	{prefix: "SG.", exact: 66, dotAt: 22},
	{prefix: "hvs.", tail: 24, digit: true},
	{prefix: "hvb.", tail: 24, digit: true},
	{prefix: "sk-", tail: minTokenTail, digit: true},
}

// Value reports whether value has a well-known credential's form: one of
// tokenPrefixes followed by at least minTokenTail characters and no white space, a
// JWT, a PEM private key, or a URL carrying one (credentialURL), alone or in a
// list separated by commas, bars or white space.
func Value(value string) bool {
	v := strings.TrimSpace(value)
	if strings.Contains(v, "-----BEGIN ") && strings.Contains(v, "PRIVATE KEY") {
		return true
	}
	if !strings.ContainsAny(v, " \t\n") && (token(v) || jwt(v)) {
		return true
	}
	// Only a URL with a user, a query, a fragment or a webhook's path can carry
	// one: the others (GOPROXY's, most registries') are not parsed.
	if !strings.Contains(v, "://") || !strings.ContainsAny(v, "@?#") && !strings.Contains(v, "/services/") && !strings.Contains(v, "/webhooks/") {
		return false
	}
	// A list of URLs (GOPROXY's, NO_PROXY-like) is judged URL by URL.
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '|' || r == ' ' || r == '\t' || r == '\n' }) {
		if credentialURL(f) {
			return true
		}
	}
	return false
}

// credentialURL reports whether u is a URL that carries a credential: a password
// (https://user:pass@host), a token as its user (https://ghp_…@github.com, which
// GitHub takes), a query or fragment parameter named like one (queryCredential)
// with a Literal value (?private_token=…, a presigned URL's sig= or
// X-Amz-Signature=, #access_token=…), or a URL that is itself the credential
// (secretURLs: a Slack or Discord webhook).
func credentialURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" {
		return false
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok || token(u.User.Username()) {
			return true
		}
	}
	for _, raw := range []string{u.RawQuery, u.Fragment} {
		// ParseQuery keeps what it parsed before an error: a malformed pair
		// elsewhere does not hide a credential.
		q, _ := url.ParseQuery(raw)
		for name, vs := range q {
			if slices.ContainsFunc(vs, func(v string) bool { return queryCredential(name, v) }) {
				return true
			}
		}
	}
	for _, w := range secretURLs {
		if strings.EqualFold(u.Hostname(), w.host) && strings.HasPrefix(u.Path, w.path) && strings.Count(strings.Trim(u.Path[len(w.path):], "/"), "/") >= w.slashes {
			return true
		}
	}
	return false
}

// queryCredential reports whether a URL's query parameter name=value holds a
// credential: a Literal value of a parameter named like one (Name: token,
// access_token, private_token, password, api_key, auth, X-Amz-Credential; pass,
// pwd, pw and tok, a password's and a token's short names; a presigned URL's
// signature: CloudFront's Signature, S3's X-Amz-Signature, GCS's
// X-Goog-Signature), or an opaque one of a parameter that holds a key, a signature,
// a password or a token in some URLs and something else in others (key, Azure's
// sig; k, p, t).
func queryCredential(name, value string) bool {
	up := strings.ToUpper(name)
	switch up {
	case "KEY", "SIG", "K", "P", "T":
		return opaque(value)
	case "PASS", "PWD", "PW", "TOK":
		return Literal(value)
	}
	return (Name(name) || up == "SIGNATURE" || strings.HasSuffix(up, "-SIGNATURE") || strings.HasSuffix(up, "_SIGNATURE")) && Literal(value)
}

// opaque reports whether v, a Literal, has a secret's shape rather than a word's,
// a page's or a duration's: at least 6 characters, a letter among them and a digit
// or one of "+/=", or at least 24 letters (hunter2, a base64 signature; not value,
// dark, 2 or 1h02m30s).
func opaque(v string) bool {
	if len(v) < 6 || !Literal(v) {
		return false
	}
	if _, err := time.ParseDuration(v); err == nil {
		return false
	}
	letter, other := false, false
	for _, r := range v {
		letter = letter || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		other = other || r >= '0' && r <= '9' || r == '+' || r == '/' || r == '='
	}
	return letter && (other || len(v) >= 24)
}

// secretURLs are URLs whose path is the credential: whoever has one posts as the
// integration. slashes is how many '/' the path after path holds at least.
var secretURLs = []struct {
	host, path string
	slashes    int
}{
	{"hooks.slack.com", "/services/", 2},
	{"discord.com", "/api/webhooks/", 1},
	{"discordapp.com", "/api/webhooks/", 1},
}

// token reports whether v begins with one of tokenPrefixes followed by at least
// minTokenTail characters of a token (letters, digits and "_-.=+/"), or has one of
// tokenShapes.
func token(v string) bool {
	for _, p := range tokenPrefixes {
		if strings.HasPrefix(v, p) && len(v) >= len(p)+minTokenTail {
			return strings.IndexFunc(v[len(p):], func(r rune) bool { return !tokenByte(r) && !strings.ContainsRune(".=+/", r) }) < 0
		}
	}
	for _, s := range tokenShapes {
		t, ok := strings.CutPrefix(v, s.prefix)
		if !ok || len(t) < s.tail || s.exact > 0 && len(t) != s.exact {
			continue
		}
		digit := false
		for i, r := range t {
			switch {
			case i == s.dotAt && s.dotAt > 0:
				if r != '.' {
					return false
				}
			case s.upper && !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'), !tokenByte(r):
				return false
			}
			digit = digit || r >= '0' && r <= '9'
		}
		return digit || !s.digit
	}
	return false
}

// tokenByte reports whether r is a base64url character: a letter, a digit, '-' or '_'.
func tokenByte(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}

// jwt reports whether v is a JSON Web Token: three base64url parts separated by
// dots, the first two JSON objects ("eyJ" is how a base64url "{\"" begins), the
// signature at least minTokenTail characters (an unsigned token is no credential).
func jwt(v string) bool {
	if !strings.HasPrefix(v, "eyJ") || strings.Count(v, ".") != 2 {
		return false
	}
	parts := strings.Split(v, ".")
	if !strings.HasPrefix(parts[1], "eyJ") || len(parts[2]) < minTokenTail {
		return false
	}
	for _, p := range parts {
		if strings.IndexFunc(p, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '=')
		}) >= 0 {
			return false
		}
	}
	return true
}
