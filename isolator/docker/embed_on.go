//go:build embedinit

package docker

import _ "embed"

// Linux builds of devsandbox-init and devsandbox-proxy, made by `make embed` (the
// Makefile's embedinit build), for hosts whose engine runs in a VM (macOS) or on a
// machine of another architecture.
var (
	//go:embed initbin/devsandbox-init-linux-amd64
	initAmd64 []byte
	//go:embed initbin/devsandbox-init-linux-arm64
	initArm64 []byte
	//go:embed initbin/devsandbox-proxy-linux-amd64
	proxyAmd64 []byte
	//go:embed initbin/devsandbox-proxy-linux-arm64
	proxyArm64 []byte
)

var (
	embeddedInits   = map[string][]byte{"amd64": initAmd64, "arm64": initArm64}
	embeddedProxies = map[string][]byte{"amd64": proxyAmd64, "arm64": proxyArm64}
)
