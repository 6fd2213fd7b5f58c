package planner

import (
	"strconv"
	"unicode/utf8"

	"github.com/devsandbox/devsandbox/config"
)

// policyJSON is json.Marshal(c), written out: the digest of the proxy's policy
// (egress.Rules.ProxyPolicy, part of a kept container's spec) keeps its value, and a
// launch in a proxy mode does not pay for encoding/json's first use, its reflection
// over the type and the pages of its code (about 0.1 ms of the launch here), for a
// digest only the container isolators read. TestPolicyJSON holds it to json.Marshal,
// and fails when config.Proxy or config.Credential gains a field it does not write.
func policyJSON(c config.Proxy) []byte {
	b := make([]byte, 0, 128)
	b = append(b, `{"Default":`...)
	b = appendJSONString(b, c.Default)
	b = append(b, `,"MITM":`...)
	b = strconv.AppendBool(b, c.MITM)
	b = append(b, `,"Credentials":`...)
	if c.Credentials == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, cr := range c.Credentials {
			if i > 0 {
				b = append(b, ',')
			}
			for j, f := range [...]struct{ name, v string }{{"Host", cr.Host}, {"Header", cr.Header}, {"ValueEnv", cr.ValueEnv},
				{"ValueFile", cr.ValueFile}, {"Format", cr.Format}, {"PlaceholderEnv", cr.PlaceholderEnv}} {
				if j == 0 {
					b = append(b, '{')
				} else {
					b = append(b, ',')
				}
				b = append(b, '"')
				b = append(b, f.name...)
				b = append(b, '"', ':')
				b = appendJSONString(b, f.v)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"GitPush":`...)
	if c.GitPush == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, s := range c.GitPush {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, s)
		}
		b = append(b, ']')
	}
	b = append(b, `,"GitSSH":`...)
	b = strconv.AppendBool(b, c.GitSSH)
	return append(b, '}')
}

// appendJSONString appends s as encoding/json writes a string (with its HTML
// escaping): <, > and & and the control characters as \u00XX (but \b, \f, \n, \r and
// \t), invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
