package bwrap

import (
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// TestAbstractScopeRow: doctor warns under a kernel without Landlock scopes (ABI
// below 6, or none) and names the fix; from ABI 6 on the row passes.
func TestAbstractScopeRow(t *testing.T) {
	for _, tt := range []struct {
		abi  int
		want isolator.State
	}{{0, isolator.Warning}, {4, isolator.Warning}, {5, isolator.Warning}, {6, isolator.Active}, {7, isolator.Active}} {
		r := abstractScopeRow(tt.abi)
		if r.Status.State != tt.want {
			t.Errorf("ABI %d: state %v, want %v", tt.abi, r.Status.State, tt.want)
		}
		if tt.want == isolator.Warning && (!strings.Contains(r.Status.Reason, "abstract Unix sockets") || !strings.Contains(r.Status.Fix, "--egress=proxy")) {
			t.Errorf("ABI %d: the warning does not say what is reachable and how to avoid it: %+v", tt.abi, r.Status)
		}
	}
}
