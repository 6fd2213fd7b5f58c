package audit

import (
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Suggestion is an allow entry that would have permitted denied requests.
type Suggestion struct {
	Entry string
	// Warning, when set, says what allowing Entry opens beyond a public host: it names
	// a private (LAN, VPN, documentation) address, or a name that resolved to one.
	Warning string
}

// Withheld is a denied destination Suggest does not propose, and why.
type Withheld struct {
	Target string // host:port as the record has it
	Why    string
}

// never are the classes Suggest withholds: the proxy refuses the host's own addresses
// whatever the entries, and link-local, metadata and multicast destinations are never
// something a sandbox should be given by a pasted suggestion.
var never = []string{ClassUnspecified, ClassLoopback, ClassThisHost, ClassLinkLocal, ClassMetadata, ClassMulticast}

// ByAddressOnly reports whether only an IP or CIDR allow entry may open an address of
// class, never a host-name entry: the proxy host's own addresses, link-local, metadata
// and multicast ones. Whoever serves a name's DNS picks its addresses, and the name may
// be one the sandbox chose (an entry Suggest proposed for a name a default of deny
// refused unresolved): the entry opens that host, not the cloud's metadata service or
// this host's services.
func ByAddressOnly(class string) bool {
	switch class {
	case ClassThisHost, ClassLinkLocal, ClassMetadata, ClassMulticast:
		return true
	}
	return false
}

// Suggest returns the allow entries that would have permitted the denied requests
// among records, sorted and deduplicated (each is AllowEntry of a record's host and
// port), and the denied destinations it withholds. Only denials by the default or as
// a special-purpose address count (a deny entry wins over any allow entry).
//
// Suggest never proposes a wildcard, a malformed host, a name a C resolver reads as
// an IPv4 address (numericName), an address with a zone, or an
// unspecified, loopback, this-host, link-local, metadata or multicast address, nor a
// name that resolved to one; a private address, or a name that resolved to one, comes
// with a Warning. A name denied as a special-purpose address by a log that did not
// record which one (before Record.Special) is withheld.
func Suggest(records []Record) ([]Suggestion, []Withheld) {
	var s Suggester
	for _, r := range records {
		s.Add(r)
	}
	return s.Result()
}

// Suggester is Suggest one record at a time (Add, in the log's order), holding one
// entry per destination, not the records; its zero value is ready.
type Suggester struct {
	sugg map[string]Suggestion
	held map[string]Withheld
}

// Add takes the record r into account.
func (s *Suggester) Add(r Record) {
	if r.kind() != KindRequest || r.Decision != DecisionDeny || (r.Rule != RuleDefault && r.Rule != RulePrivate) || r.Host == "" {
		return
	}
	if s.sugg == nil {
		s.sugg, s.held = map[string]Suggestion{}, map[string]Withheld{}
	}
	entry := AllowEntry(r.Host, r.Port)
	sg, why := classifyForSuggest(r)
	if why != "" {
		s.held[entry] = Withheld{Target: net.JoinHostPort(normalize(r.Host), strconv.Itoa(r.Port)), Why: why}
		return
	}
	sg.Entry = entry
	s.sugg[entry] = sg
}

// Result is what Suggest returns of the records added.
func (s *Suggester) Result() ([]Suggestion, []Withheld) {
	out := make([]Suggestion, 0, len(s.sugg))
	for _, sg := range s.sugg {
		out = append(out, sg)
	}
	slices.SortFunc(out, func(a, b Suggestion) int { return strings.Compare(a.Entry, b.Entry) })
	wh := make([]Withheld, 0, len(s.held))
	for _, w := range s.held {
		wh = append(wh, w)
	}
	slices.SortFunc(wh, func(a, b Withheld) int { return strings.Compare(a.Target, b.Target) })
	return out, wh
}

// classifyForSuggest decides on one denied record: a Suggestion (with a warning or
// not), or why it is withheld.
func classifyForSuggest(r Record) (Suggestion, string) {
	host := normalize(r.Host)
	class, what := r.Special, ""
	a, err := netip.ParseAddr(host)
	switch {
	case err == nil && a.Zone() != "":
		return Suggestion{}, "an address with a zone is not an entry"
	case err == nil:
		class, what = Classify(a)
	case !validName(host):
		return Suggestion{}, "not a host name an entry can hold (a wildcard or a malformed name)"
	case numericName(host):
		return Suggestion{}, "an IPv4 address in hex or octal parts, as a C resolver reads it; write the address itself if you mean to allow it"
	case IsLoopbackName(host):
		class = ClassLoopback
	case r.Rule == RulePrivate && class == "":
		return Suggestion{}, "it resolved to a special-purpose address the log does not name; check the log's reason and add it by hand if you mean to"
	}
	if what == "" {
		what = classWords(class)
	}
	if slices.Contains(never, class) {
		return Suggestion{}, what + ": never suggested"
	}
	if class == "" {
		return Suggestion{}, ""
	}
	subject := host + " is " + what
	if err != nil {
		subject = host + " resolved to " + what
	}
	return Suggestion{Warning: subject + ": allowing it lets the sandbox reach that network, not just the internet"}, ""
}

// classWords says a class in words, for a record that names the class only.
func classWords(class string) string {
	switch class {
	case ClassPrivate:
		return "a private address"
	case ClassCGNAT:
		return "a carrier-grade NAT address"
	case ClassThisHost:
		return "an address of this host"
	case "":
		return ""
	}
	return "a " + class + " address"
}

// validName reports whether h is a DNS name an allow entry can hold: labels of
// letters, digits, '-' and '_' (no wildcard), at most 253 bytes.
func validName(h string) bool {
	if h == "" || len(h) > 253 || strings.Trim(h, "0123456789.") == "" {
		return false
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// numericName reports whether the name h (lower case) is what a C resolver's
// inet_aton reads as an IPv4 address: one to four dot-separated parts, each decimal,
// octal (a leading 0) or hex (0x and at least one hex digit), such as
// "0xa9.0xfe.0xa9.0xfe" or "0xa9fea9fe" (169.254.169.254). As an entry it would be a
// name, which names the private addresses it resolves to.
func numericName(h string) bool {
	parts := strings.Split(h, ".")
	if len(parts) > 4 {
		return false
	}
	for _, p := range parts {
		digits, hex := p, false
		if strings.HasPrefix(p, "0x") {
			digits, hex = p[2:], true
		}
		if digits == "" {
			return false
		}
		for _, c := range []byte(digits) {
			if !(c >= '0' && c <= '9' || hex && c >= 'a' && c <= 'f') {
				return false
			}
		}
	}
	return true
}
