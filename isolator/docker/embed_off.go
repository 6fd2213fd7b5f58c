//go:build !embedinit

package docker

// embeddedInits is nil without the embedinit build tag: on Linux the init next to
// devsandbox is used.
var embeddedInits map[string][]byte
