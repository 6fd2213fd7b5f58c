package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// A kept session whose hello carries nothing starts its command before the hello
// reaches the init (wire.StartFirstArg): a short command can end, and the init exit,
// before the host writes the hello. An engine half-closes the exec's stream then; a
// relay on the way may close it whole, and the hello's write fails (EPIPE). The run is
// the command's: its status and output, no error.
func TestKeptStartFirstEndsBeforeHello(t *testing.T) {
	f := newFake(t)
	b, p := testIsolator(t, f, true)
	p.Secrets, p.HostEnv = nil, nil
	p.Egress = egress.Rules{Mode: egress.Open}
	f.endedExec = func(cmd []string, stdout, stderr io.Writer) int {
		if !slices.Contains(cmd, wire.StartFirstArg) {
			t.Errorf("exec %q without %s", cmd, wire.StartFirstArg)
		}
		fmt.Fprint(stderr, wire.ReadyMarker)
		fmt.Fprint(stdout, "done\n")
		return 0
	}
	var out, errOut bytes.Buffer
	code, err := b.Run(context.Background(), p, isolator.Stdio{Out: &out, Err: &errOut})
	if err != nil || code != 0 || out.String() != "done\n" || errOut.Len() != 0 {
		t.Fatalf("Run: %d %v, stdout %q, stderr %q; want 0, no error, stdout \"done\\n\"", code, err, out.String(), errOut.String())
	}
}

// A session whose hello carries a secret: the init reads the hello before it starts
// the command, so an init that ended before the hello arrived ran nothing. The run
// fails with what the init reported, or, when it reported nothing, with the hello's
// failure; the secret went nowhere.
func TestKeptInitEndsBeforeHello(t *testing.T) {
	for _, tc := range []struct {
		name   string
		report string
		check  func(err error) bool
	}{
		{"init failed", wire.FailMarker("mask /home/u/.aws is not an empty directory"), func(err error) bool {
			return errors.Is(err, isolator.ErrProtection) && strings.Contains(err.Error(), "mask /home/u/.aws is not an empty directory")
		}},
		{"nothing reported", "", func(err error) bool {
			return errors.Is(err, syscall.EPIPE) && strings.Contains(err.Error(), "sending the session's secrets to the container")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			b, p := testIsolator(t, f, true)
			p.Egress = egress.Rules{Mode: egress.Open}
			f.endedExec = func(cmd []string, _, stderr io.Writer) int {
				if slices.Contains(cmd, wire.StartFirstArg) {
					t.Errorf("exec %q with %s, its hello carries a secret", cmd, wire.StartFirstArg)
				}
				fmt.Fprint(stderr, tc.report)
				return 125
			}
			var errOut bytes.Buffer
			code, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: &errOut})
			if err == nil || !tc.check(err) {
				t.Fatalf("Run: %d %v", code, err)
			}
			if strings.Contains(err.Error()+errOut.String(), "s3cret") {
				t.Errorf("the secret's value is in the error or on stderr: %v %q", err, errOut.String())
			}
		})
	}
}
