package audit

import (
	"net/netip"
	"strings"

	"github.com/devsandbox/devsandbox/internal/addrclass"
)

// Classes of special-purpose address (Record.Special), as Classify names them.
const (
	ClassMetadata      = addrclass.ClassMetadata
	ClassUnspecified   = addrclass.ClassUnspecified
	ClassLoopback      = addrclass.ClassLoopback
	ClassThisHost      = addrclass.ClassThisHost
	ClassPrivate       = addrclass.ClassPrivate
	ClassCGNAT         = addrclass.ClassCGNAT
	ClassLinkLocal     = addrclass.ClassLinkLocal
	ClassMulticast     = addrclass.ClassMulticast
	ClassReserved      = addrclass.ClassReserved
	ClassProtocol      = addrclass.ClassProtocol
	ClassDocumentation = addrclass.ClassDocumentation
)

// Classify returns the class of special-purpose address a is (ClassLoopback, …) and
// what it is in words, or "", "" for an ordinary public address (addrclass.Classify).
func Classify(a netip.Addr) (class, what string) { return addrclass.Classify(a) }

// ClassifyAt is Classify on a host whose own interface addresses isLocal reports: one
// of them is ClassThisHost in whatever range it lies, but for the unspecified and
// loopback ones (addrclass.ClassifyAt).
func ClassifyAt(a netip.Addr, isLocal func(netip.Addr) bool) (class, what string) {
	return addrclass.ClassifyAt(a, isLocal)
}

// Embedded returns the IPv4 address a well-known NAT64 address reaches, else a.
func Embedded(a netip.Addr) netip.Addr { return addrclass.Embedded(a) }

// IsLoopbackName reports whether a host name is reserved for the local host: localhost
// and the names below it (RFC 6761), which resolvers answer with loopback addresses.
func IsLoopbackName(host string) bool { return addrclass.IsLoopbackName(normalize(host)) }

// normalize lower-cases a host and drops a trailing dot and IPv6 brackets.
func normalize(h string) string {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	return h
}

func isIPv6(h string) bool {
	a, err := netip.ParseAddr(h)
	return err == nil && a.Is6()
}
