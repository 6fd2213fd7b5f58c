package credential

import (
	"strconv"
	"strings"
)

// Literal reports whether v, a value as a file's text writes it (a setting of a
// config file, a shell assignment, a URL's query parameter), could be a
// credential written out: not empty, no reference to a value kept elsewhere
// (reference), no placeholder a template leaves for the user (placeholder), no
// path (/, ./, ../, ~/: the credential's file, GOOGLE_APPLICATION_CREDENTIALS=./sa.json),
// no boolean or number. It is for text that is a template of what a tool reads;
// a variable's value passed as it is (env.passthrough, env.set) is what crosses,
// and only an empty one carries nothing (tools.Registry.Credential). v is read as
// text that expands no variable (a git config, a TOML, YAML or JSON file): a '$'
// inside a longer value before a lower-case letter is part of it (pa$word).
func Literal(v string) bool {
	return literal(v, Text)
}

// literal is Literal for a file of syntax s: in a Shell file a '$' before a
// letter is a reference wherever it is (pa$word is "pa" and $word's value).
func literal(v string, s Syntax) bool {
	if v == "" || reference(v, s) || placeholder(v) {
		return false
	}
	for _, p := range []string{"/", "./", "../", "~/"} {
		if strings.HasPrefix(v, p) {
			return false
		}
	}
	switch strings.ToLower(v) {
	case "true", "false", "yes", "no", "on", "off", "null", "none", "nil":
		return false
	}
	_, err := strconv.ParseFloat(v, 64)
	return err != nil
}

// reference reports whether v refers to a value kept elsewhere, in a syntax of the
// files sent by content: a variable ($NAME, ${NAME}, $(command): shell's, compose's,
// VS Code's ${env:NAME}, GitHub's ${{ secrets.X }}; "$$" is compose's escaped '$', no
// reference; outside a Shell file a '$' after the value's first character and
// before a lower-case letter is none: such files name what they refer to whole or
// in upper case, and pa$word is a password), a template ({{ … }}: mise's, Helm's), Python configparser's
// interpolation (%(name)s), a YAML tag that loads one (!secret, !env_var, !ENV,
// !vault), or a 1Password secret reference (op://…).
func reference(v string, s Syntax) bool {
	for i := 0; i < len(v)-1; i++ {
		if v[i] != '$' {
			continue
		}
		c := v[i+1]
		if c == '$' {
			i++
			continue
		}
		if s != Shell && i > 0 && c >= 'a' && c <= 'z' {
			continue
		}
		if c == '{' || c == '(' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			return true
		}
	}
	if strings.Contains(v, "{{") || strings.Contains(v, "%(") || strings.HasPrefix(v, "op://") {
		return true
	}
	switch v {
	case "!secret", "!env_var", "!ENV", "!env", "!vault":
		return true
	}
	return false
}

// placeholder reports whether v is what a template or an example leaves for the
// user to fill in: <your token>, YOUR_API_KEY, your-token-here, ********,
// xxxxxxxx, ... or "…".
func placeholder(v string) bool {
	if len(v) >= 2 && v[0] == '<' && v[len(v)-1] == '>' {
		return true
	}
	if len(v) > 5 && strings.EqualFold(v[:4], "your") && strings.ContainsRune("_- ", rune(v[4])) {
		return true
	}
	if v == "..." || v == "…" {
		return true
	}
	for _, only := range []string{"*", "x", "X"} {
		if strings.Trim(v, only) == "" {
			return true
		}
	}
	return false
}
