//go:build !linux

package companion

import (
	"context"
	"fmt"
	"io"
)

// Serve runs only inside a Linux engine.
func Serve(_ context.Context, _ io.Reader, _, stderr io.Writer, _ Proxy) int {
	fmt.Fprintln(stderr, "devsandbox-proxy companion: runs inside a Linux docker engine only")
	return 2
}
