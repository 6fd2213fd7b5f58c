package proxy

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
)

// minFormLen is the shortest derived form of a value the proxy masks: a shorter one
// (a short password's base64 fragment) would mask ordinary text by chance. The value
// itself is masked at any length.
const minFormLen = 12

// maskForm is one way a credential's value can come back in a response (from), and
// what stands for it there (to, as long).
type maskForm struct{ from, to []byte }

// forms returns what the proxy masks for c in responses: the value (masked with the
// placeholder when as long, else asterisks), then, each masked with asterisks, the
// forms an echo of it commonly takes: URL query and path escaping, JSON string
// escaping, and base64 and base64url at each of the three offsets a value can have in
// a longer encoded text (the characters that encode the value's bytes alone: an
// encoded "user:token" or "Bearer token" holds one of them). For a Basic credential
// whose value is base64 of user:password (git over HTTPS), the same for the decoded
// user:password and for the password alone.
func (c *credential) forms() []maskForm {
	if c.masks != nil {
		return c.masks
	}
	return c.computeForms()
}

func (c *credential) computeForms() []maskForm {
	if c.Value == "" {
		return nil
	}
	out := []maskForm{{from: []byte(c.Value), to: []byte(c.mask())}}
	seen := map[string]bool{c.Value: true}
	add := func(f string) {
		if len(f) < minFormLen || seen[f] {
			return
		}
		seen[f] = true
		out = append(out, maskForm{from: []byte(f), to: bytes.Repeat([]byte("*"), len(f))})
	}
	secrets := []string{c.Value}
	if strings.HasPrefix(strings.ToLower(c.Format), "basic ") {
		if b, err := base64.StdEncoding.DecodeString(c.Value); err == nil {
			if _, pass, ok := strings.Cut(string(b), ":"); ok {
				secrets = append(secrets, string(b), pass)
			}
		}
	}
	for _, s := range secrets {
		add(s)
		add(url.QueryEscape(s))
		add(url.PathEscape(s))
		if j, err := json.Marshal(s); err == nil {
			add(string(j[1 : len(j)-1]))
		}
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			for off := range 3 {
				add(base64Inner(enc, s, off))
			}
		}
	}
	return out
}

// base64Inner is the part of the encoding of s, placed off bytes (0, 1 or 2) into an
// encoded text, that depends on s alone: the characters whose six bits all come from
// s, whatever precedes and follows it.
func base64Inner(enc *base64.Encoding, s string, off int) string {
	e := enc.EncodeToString(append(make([]byte, off), s...))
	from := (8*off + 5) / 6      // the first character that starts within s
	to := 8 * (off + len(s)) / 6 // the characters that end within s
	if to <= from {
		return ""
	}
	return e[from:to]
}
