package credential

import (
	"strconv"
	"strings"
)

// In returns where text, a file of no syntax known here (shell exports, KEY=value
// lines, TOML, YAML, JSON, an .npmrc), holds what Name and Value take for a
// credential: for each line, the name of a setting whose literal value is one by
// the setting's name or by the value's form ("GITHUB_TOKEN (line 3)", "_authToken
// (line 1)"), else a value of a credential's form on it ("a value (line 7)"); and
// "a PEM private key". Names and line numbers only, never a value. A value that
// refers to another (holding '$' or "{{"), a path, a boolean or a number is no
// literal credential. Certificates (PEM blocks) are public and not read.
func In(text []byte) []string {
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
		if what, ok := lineCredential(line); ok {
			out = append(out, what+" (line "+strconv.Itoa(n+1)+")")
		}
	}
	return out
}

// lineCredential judges one line: each NAME=value or NAME: value on it (the name
// quoted or not, the value quoted or up to a blank or one of ",;#}]"), then every
// field of it by its form alone. It returns the name, or "a value" for a field.
func lineCredential(line string) (string, bool) {
	for i := 0; i < len(line); i++ {
		if line[i] != '=' && line[i] != ':' {
			continue
		}
		name, value := nameBefore(line, i), valueAfter(line, i+1)
		if name == "" || !literal(value) {
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
	return "", false
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
// or the text up to a blank or one of ",;#}]".
func valueAfter(line string, i int) string {
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
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
	return line[i:j]
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}

// literal reports whether v could be a credential written out: not empty, no
// reference to another value, no path (/, ./, ../, ~/: the credential's file,
// GOOGLE_APPLICATION_CREDENTIALS=./sa.json), no boolean or number.
func literal(v string) bool {
	if v == "" || strings.Contains(v, "$") || strings.Contains(v, "{{") {
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
