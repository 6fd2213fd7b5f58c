//go:build !linux

package companion

import (
	"context"
	"fmt"
	"io"
	"os"
)

// Serve runs only inside a Linux engine.
func Serve(_ context.Context, _ io.Reader, _, stderr io.Writer, _ Proxy) int {
	fmt.Fprintln(stderr, "devsandbox-proxy companion: runs inside a Linux docker engine only")
	return 2
}

// ServeHeld runs only inside a Linux engine.
func ServeHeld(ctx context.Context, _ *os.File, _, stderr io.Writer, _ Proxy) int {
	return Serve(ctx, nil, nil, stderr, nil)
}

// Hold runs only inside a Linux engine.
func Hold(ctx context.Context, stderr io.Writer) int {
	return Serve(ctx, nil, nil, stderr, nil)
}
