package egress

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Entry is one allow or deny entry: a host name, a "*.domain" wildcard, an IP address
// or a CIDR, each with an optional port (0 = any). Exactly one of Host and Prefix is set.
type Entry struct {
	Host     string       // lower-case name; for a wildcard, the domain after "*."
	Wildcard bool         // "*.domain": the domain's subdomains (proxy rules only)
	Prefix   netip.Prefix // an address is a full-length prefix
	Port     uint16
}

// ParseEntry parses the grammar shared by every allow and deny list: host, *.domain,
// IP or CIDR, with optional ":port"; IPv6 bare, or "[addr]:port" with a port.
func ParseEntry(s string) (Entry, error) {
	if s == "" {
		return Entry{}, fmt.Errorf("an empty egress entry")
	}
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		return Entry{}, urlEntryError(s, scheme, rest)
	}
	if s == "*" {
		return Entry{}, fmt.Errorf(`a bare "*" is not an entry; a wildcard is written "*.domain"`)
	}
	host, port := s, ""
	switch {
	case s[0] == '[':
		end := strings.IndexByte(s, ']')
		if end < 0 || (end+1 < len(s) && s[end+1] != ':') {
			return Entry{}, fmt.Errorf("%q: write an IPv6 address with a port as [addr]:port", s)
		}
		host, port = s[1:end], strings.TrimPrefix(s[end+1:], ":")
		if end+1 < len(s) && port == "" {
			return Entry{}, fmt.Errorf("%q: no port after ':'", s)
		}
	case strings.Count(s, ":") == 1:
		host, port, _ = strings.Cut(s, ":")
		if port == "" {
			return Entry{}, fmt.Errorf("%q: no port after ':'", s)
		}
	}
	var e Entry
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 || port[0] == '+' {
			return Entry{}, fmt.Errorf("%q: port %q is not a number from 1 to 65535", s, port)
		}
		e.Port = uint16(n)
	}
	if p, err := netip.ParsePrefix(host); err == nil {
		e.Prefix = p.Masked()
		return e, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if s[0] == '[' && !a.Is6() {
			return Entry{}, fmt.Errorf("%q: brackets hold an IPv6 address only; write %s:%s", s, a, port)
		}
		if a.Zone() != "" {
			return Entry{}, fmt.Errorf("%q: an address with a zone is not allowed", s)
		}
		e.Prefix = netip.PrefixFrom(a, a.BitLen())
		return e, nil
	}
	if s[0] == '[' || strings.Contains(host, ":") {
		return Entry{}, fmt.Errorf("%q is not a valid IPv6 address or CIDR (write a port as [addr]:port)", s)
	}
	if looksNumeric(host) || strings.Contains(host, "/") && looksNumeric(strings.ReplaceAll(host, "/", "")) {
		return Entry{}, fmt.Errorf("%q is not a valid IPv4 address or CIDR", s)
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		e.Wildcard, name = true, rest
	}
	if err := ValidName(name); err != nil {
		if name == s {
			return Entry{}, err // the error names the entry already
		}
		return Entry{}, fmt.Errorf("%q: %v", s, err)
	}
	e.Host = name
	return e, nil
}

// urlEntryError explains that an entry is a host, not a URL, and shows the entry that
// would allow what the URL names: its host, with the scheme's port when one is known.
func urlEntryError(s, scheme, rest string) error {
	hostport, _, _ := strings.Cut(rest, "/")
	if _, after, ok := strings.Cut(hostport, "@"); ok {
		hostport = after
	}
	hint := hostport
	if !strings.Contains(strings.TrimPrefix(hostport, "["), ":") || strings.HasSuffix(hostport, "]") {
		switch strings.ToLower(scheme) {
		case "https":
			hint = hostport + " or " + hostport + ":443"
		case "http":
			hint = hostport + " or " + hostport + ":80"
		}
	}
	return fmt.Errorf("%q: an egress entry is a host, not a URL (no scheme or path): write %s", s, hint)
}

// looksNumeric reports whether s has only digits and dots, so it can only be an IPv4
// address: "1.2.3" is a bad address rather than a host name.
func looksNumeric(s string) bool {
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != '.' {
			return false
		}
	}
	return s != ""
}

// ValidName checks a lower-case DNS name: dot-separated labels of letters, digits, '-'
// and '_' (not at a label's ends), 1-63 bytes each, 253 in all. The error says which
// rule n breaks.
func ValidName(n string) error {
	if n == "" {
		return fmt.Errorf("%q is not a host name", n)
	}
	if len(n) > 253 {
		return fmt.Errorf("%q is not a host name: longer than 253 bytes", n)
	}
	for _, l := range strings.Split(n, ".") {
		switch {
		case l == "":
			return fmt.Errorf("%q is not a host name: an empty label (two dots in a row, or a dot at the start)", n)
		case len(l) > 63:
			return fmt.Errorf("%q is not a host name: the label %q is longer than 63 bytes", n, l)
		case l[0] == '-' || l[len(l)-1] == '-':
			return fmt.Errorf("%q is not a host name: the label %q begins or ends with '-'", n, l)
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("%q is not a host name: %q is not a letter, a digit, '-' or '_'", n, c)
			}
		}
	}
	return nil
}

// String returns the entry in the grammar ParseEntry reads.
func (e Entry) String() string {
	var h string
	switch {
	case e.Host != "" && e.Wildcard:
		h = "*." + e.Host
	case e.Host != "":
		h = e.Host
	case e.Prefix.Bits() == e.Prefix.Addr().BitLen():
		h = e.Prefix.Addr().String()
	default:
		h = e.Prefix.String()
	}
	if e.Port == 0 {
		return h
	}
	if e.Prefix.IsValid() && e.Prefix.Addr().Is6() {
		h = "[" + h + "]"
	}
	return h + ":" + strconv.Itoa(int(e.Port))
}

// IsAddress reports whether the entry names addresses (an IP or CIDR).
func (e Entry) IsAddress() bool { return e.Prefix.IsValid() }

// ParseEntries parses a list, naming the first bad entry.
func ParseEntries(ss []string) ([]Entry, error) {
	var out []Entry
	for _, s := range ss {
		e, err := ParseEntry(s)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}
