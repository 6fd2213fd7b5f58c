//go:build integration

package integration

import (
	"strings"
	"testing"
)

// TestContainerCommandHoldsNoCapability: on every docker engine the command holds no
// capability in any set, the bounding set included, one-shot or kept. On a rootful
// engine the command's non-root user and no_new_privs already leave its effective set
// empty, so only the bounding set shows the container's CapDrop ALL: without it the
// engine's default capabilities stay there, and a set-uid or file-capability program,
// were no_new_privs to go, would gain them.
func TestContainerCommandHoldsNoCapability(t *testing.T) {
	const script = `grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status | tr -s '\t ' ' '`
	const want = "CapInh: 0000000000000000\nCapPrm: 0000000000000000\nCapEff: 0000000000000000\n" +
		"CapBnd: 0000000000000000\nCapAmb: 0000000000000000\nNoNewPrivs: 1\n"
	forEachIsolatorOf(t, dockerVariants(), func(t *testing.T, iso string) {
		for _, flags := range [][]string{{"--egress=none"}, {"--keep-container", "--egress=none"}} {
			p := newProject(t)
			if got := p.mustSandbox(iso, flags, script); got != want {
				t.Errorf("%s: the command's capabilities:\n%s\nwant none in any set:\n%s", strings.Join(flags, " "), got, want)
			}
		}
	})
}
