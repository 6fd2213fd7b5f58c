package credential

import (
	"path"
	"slices"
	"strings"
)

// Syntax is how a file sent by content expands variables, which decides what is a
// reference (literal).
type Syntax int

const (
	// Text expands no '$' inside a value: git config, TOML, YAML, JSON, .npmrc,
	// dotenv files (whose loaders expand ${NAME}, some $NAME, none pa$word).
	Text Syntax = iota
	// Shell expands $name anywhere: .envrc, shell scripts and rc files.
	Shell
)

// shellNames are the files host tools run as shell scripts, and their rc files.
var shellNames = []string{".envrc", ".profile", ".bashrc", ".bash_profile", ".zshrc", ".zprofile", ".kshrc"}

// shells are the interpreters a "#!" line names that expand $name.
var shells = []string{"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash"}

// SyntaxOf returns the syntax of the file named name holding text: Shell for
// .envrc, an rc file, a name ending in .sh, .bash, .zsh or .ksh, or a "#!" line
// naming a shell (directly or through env); Text for any other file, the judgement
// that refuses more (pa$word is a literal in Text).
func SyntaxOf(name string, text []byte) Syntax {
	base := path.Base(name)
	if slices.Contains(shellNames, base) || slices.Contains([]string{".sh", ".bash", ".zsh", ".ksh"}, path.Ext(base)) {
		return Shell
	}
	first, _, _ := strings.Cut(string(text[:min(len(text), 128)]), "\n")
	interp, ok := strings.CutPrefix(first, "#!")
	if !ok {
		return Text
	}
	f := strings.Fields(interp)
	if len(f) > 1 && path.Base(f[0]) == "env" {
		f = f[1:]
	}
	if len(f) > 0 && slices.Contains(shells, path.Base(f[0])) {
		return Shell
	}
	return Text
}

// passwordOption is the options of commands that take a password.
type passwordOption struct {
	commands, options []string
	attached, pair    bool   // the value only attached to a short option; a user:password pair
	scheme            string // the value's prefix before the password (openssl's pass:)
}

// passwordOptions are the commands whose options take a password after a blank or
// attached (sshpass -p, redis-cli -a), only attached where the option alone asks
// for it (mysql -pSECRET; mysql -p db prompts), a user:password pair (curl -u), or
// a password after a scheme (openssl -passin pass:…; env:NAME and file:PATH are
// none).
var passwordOptions = []passwordOption{
	{commands: []string{"sshpass"}, options: []string{"-p"}},
	{commands: []string{"mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mariadb", "mariadb-dump", "mariadb-admin"}, options: []string{"-p"}, attached: true},
	{commands: []string{"curl"}, options: []string{"-u", "--user", "-U", "--proxy-user"}, pair: true},
	{commands: []string{"redis-cli", "valkey-cli"}, options: []string{"-a", "--pass"}},
	{commands: []string{"openssl"}, options: []string{"-pass", "-passin", "-passout"}, scheme: "pass:"},
}

// commandCredential judges a command line's options that take a password: those of
// passwordOptions' commands (from the command's name to a ';', '|' or '&'), named
// "COMMAND OPTION", and any long option whose last word is a password's, a token's,
// a secret's or an API key's (--password, --api-key, --token; not --password-file
// or --token-ttl) followed by its value after a blank (after an '=' the name=value
// judgement has it), named by the option. The value must be literal in syn.
func commandCredential(line string, syn Syntax) (string, bool) {
	if !option(line) {
		// No option: most lines of a file are none.
		return "", false
	}
	fs := strings.Fields(line)
	cmd := ""
	for i, raw := range fs {
		// A command's name: its path's last element, after an alias's quote.
		f := unquote(raw)
		w := f
		if j := strings.LastIndexAny(w, "'\"=(`"); j >= 0 {
			w = w[j+1:]
		}
		if w = path.Base(w); slices.ContainsFunc(passwordOptions, func(o passwordOption) bool { return slices.Contains(o.commands, w) }) {
			cmd = w
			continue
		}
		next := ""
		if i+1 < len(fs) {
			next = unquote(fs[i+1])
		}
		if cmd != "" {
			if what, ok := optionPassword(cmd, f, next, syn); ok {
				return what, true
			}
		}
		if strings.ContainsAny(raw, ";|&") {
			cmd = ""
		}
		// A value holding an '=' is a specification (docker build --secret
		// id=npm,src=.npmrc), not the secret; base64's padding aside.
		if longCredential(f) && !strings.HasPrefix(next, "-") && !strings.Contains(strings.TrimRight(next, "="), "=") && literal(next, syn) {
			return f, true
		}
	}
	return "", false
}

// optionPassword judges the field opt of a command line of passwordOptions'
// command cmd, the next field being next.
func optionPassword(cmd, opt, next string, syn Syntax) (string, bool) {
	for _, o := range passwordOptions {
		if !slices.Contains(o.commands, cmd) {
			continue
		}
		for _, name := range o.options {
			var v string
			switch {
			case opt == name && !o.attached:
				v = next
			case len(name) == 2 && len(opt) > 2 && strings.HasPrefix(opt, name) && o.scheme == "":
				v = unquote(opt[2:])
			default:
				continue
			}
			if o.scheme != "" {
				pw, ok := strings.CutPrefix(v, o.scheme)
				if !ok {
					continue
				}
				v = pw
			}
			if o.pair {
				_, pw, ok := strings.Cut(v, ":")
				if !ok || strings.HasPrefix(v, "$") {
					continue
				}
				v = pw
			}
			if literal(v, syn) {
				return cmd + " " + name, true
			}
		}
	}
	return "", false
}

// longCredential reports whether f is a long option (--name, no value attached)
// whose last word is PASSWORD, PASSWD, PASS, PASSPHRASE, TOKEN, SECRET or APIKEY,
// or API KEY; --no-… takes no value.
func longCredential(f string) bool {
	name, ok := strings.CutPrefix(f, "--")
	if !ok || strings.ContainsRune(name, '=') || strings.HasPrefix(name, "no-") {
		return false
	}
	words := strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool { return r == '-' || r == '_' })
	n := len(words)
	if n == 0 {
		return false
	}
	switch words[n-1] {
	case "PASSWORD", "PASSWD", "PASS", "PASSPHRASE", "TOKEN", "SECRET", "APIKEY":
		return true
	case "KEY":
		return n > 1 && words[n-2] == "API"
	}
	return false
}

// unquote returns a field of a command line without its quotes, brackets,
// parentheses, ',' and ';' (a JSON array of arguments: ["-p", "hunter2"]).
func unquote(f string) string {
	return strings.Trim(f, "'\"`;,()[]")
}

// option reports whether line may hold an option: a '-' after a blank, a quote or
// a '['.
func option(line string) bool {
	for i := 1; i < len(line); i++ {
		if line[i] == '-' && strings.IndexByte(" \t\"'[", line[i-1]) >= 0 {
			return true
		}
	}
	return false
}
