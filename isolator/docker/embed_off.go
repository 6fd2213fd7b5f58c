//go:build !embedinit

package docker

// embeddedInits and embeddedProxies are nil without the embedinit build tag: on Linux
// the programs installed next to devsandbox are shipped.
var embeddedInits, embeddedProxies map[string][]byte
