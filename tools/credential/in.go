package credential

import (
	"slices"
	"strconv"
	"strings"
)

// In returns where text, a file of syntax s (SyntaxOf: shell exports, KEY=value
// lines, TOML, YAML, JSON, an .npmrc), holds what Name and Value take for a
// credential: for each line, the name of a setting whose literal value is one by
// the setting's name or by the value's form ("GITHUB_TOKEN (line 3)", "_authToken
// (line 1)"), else a value of a credential's form on it ("a value (line 7)"); and
// "a PEM private key". Names and line numbers only, never a value. A value that is
// not Literal (empty, a reference to another such as $NAME, ${env:NAME} or {{ … }},
// a placeholder, a path, a boolean or a number) is no credential written out, by
// its name; by its form it still can be. A password on a command line is found by
// the option that takes it ("sshpass -p (line 2)": commandCredential). Certificates
// (PEM blocks) are public and not read.
func In(text []byte, syn Syntax) []string {
	s := string(text)
	var out []string
	if strings.Contains(s, "-----BEGIN ") && strings.Contains(s, "PRIVATE KEY") {
		out = append(out, "a PEM private key")
	}
	inPEM := false
	for n, line := range strings.Split(s, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "-----BEGIN "):
			inPEM = true
			continue
		case strings.HasPrefix(t, "-----END "):
			inPEM = false
			continue
		case inPEM:
			continue
		}
		if what, ok := lineCredential(line, syn); ok {
			out = append(out, what+" (line "+strconv.Itoa(n+1)+")")
		}
	}
	return out
}

// lineCredential judges one line: the options of a command line that take a
// password (commandCredential), each NAME=value or NAME: value on it (the name
// quoted or not, the value quoted or up to a blank or one of ",;#}]"), then every
// field of it and every URL on it by its form alone. It returns the command and
// option, the name, or "a value" for a field or a URL.
func lineCredential(line string, syn Syntax) (string, bool) {
	if what, ok := commandCredential(line, syn); ok {
		return what, true
	}
	for i := 0; i < len(line); i++ {
		if line[i] != '=' && line[i] != ':' {
			continue
		}
		name, value := nameBefore(line, i), valueAfter(line, i+1)
		if name == "" || !literal(value, syn) {
			continue
		}
		if Name(name) || Value(value) {
			return name, true
		}
	}
	for _, f := range strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(" \t\r\"'`=,;()[]{}<>", r) }) {
		if Value(f) {
			return "a value", true
		}
	}
	for _, u := range urls(line) {
		if Value(u) {
			return "a value", true
		}
	}
	return "", false
}

// urls returns the URLs written on line, each from its scheme to a blank, a quote
// or one of "<>()[]{}", its query's '=' and '&' kept (the fields lineCredential
// splits at '=' cut a query apart).
func urls(line string) []string {
	var out []string
	for rest := line; ; {
		i := strings.Index(rest, "://")
		if i < 0 {
			return out
		}
		start := i
		for start > 0 && schemeByte(rest[start-1]) {
			start--
		}
		end := i + 3
		for end < len(rest) && !strings.ContainsRune(" \t\r\"'`<>()[]{}", rune(rest[end])) {
			end++
		}
		if start < i {
			out = append(out, rest[start:end])
		}
		rest = rest[end:]
	}
}

// schemeByte reports whether c may be part of a URL's scheme.
func schemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-'
}

// nameBefore returns the name that ends before line[i] (blanks and a closing quote
// between them skipped): letters, digits and "_.-".
func nameBefore(line string, i int) string {
	j := i
	for j > 0 && (line[j-1] == ' ' || line[j-1] == '\t') {
		j--
	}
	if j > 0 && (line[j-1] == '"' || line[j-1] == '\'') {
		j--
	}
	end := j
	for j > 0 && nameByte(line[j-1]) {
		j--
	}
	return line[j:end]
}

// valueAfter returns the value that starts at line[i]: a quoted string's content,
// or the text up to a blank or one of ",;#}]", after an HTTP authentication
// scheme's name (Bearer) if it begins with one.
func valueAfter(line string, i int) string {
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	if i < len(line) && line[i] == '<' {
		// An unquoted placeholder, <your password>, blanks and all.
		if end := strings.IndexByte(line[i:], '>'); end > 0 {
			return line[i : i+end+1]
		}
	}
	if i < len(line) && (line[i] == '"' || line[i] == '\'') {
		q := line[i]
		if end := strings.IndexByte(line[i+1:], q); end >= 0 {
			return line[i+1 : i+1+end]
		}
		return line[i+1:]
	}
	j := i
	for j < len(line) && !strings.ContainsRune(" \t\r,;#}]", rune(line[j])) {
		j++
	}
	if slices.ContainsFunc(authSchemes, func(s string) bool { return strings.EqualFold(s, line[i:j]) }) && j < len(line) && (line[j] == ' ' || line[j] == '\t') {
		// An HTTP Authorization's scheme: the credential follows it.
		if v := valueAfter(line, j); v != "" {
			return v
		}
	}
	return line[i:j]
}

// authSchemes are the HTTP authentication schemes an Authorization header's
// credential follows ("Authorization: Bearer …").
var authSchemes = []string{"Basic", "Bearer", "Token", "Bot", "Digest"}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}
