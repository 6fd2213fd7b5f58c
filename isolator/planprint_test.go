package isolator_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// TestPlanPrintHidesHostEnv is the attack of a harness that logs its Plan, or an error
// carrying it, with fmt: the host environment's values (env secrets, a proxy
// credential's value, the MITM CA's private key) must not reach the text, whatever the
// verb, while the names stay, so a log still says which variables the run takes.
func TestPlanPrintHidesHostEnv(t *testing.T) {
	const token, caKey = "ghp_SECRETtokenVALUE", "-----BEGIN PRIVATE KEY-----MIIEvQIBADAN"
	p := viewPlan()
	p.HostEnv = map[string]string{"API_TOKEN": token, isolator.ProxyCAVar: caKey}
	e := p.HostEnv
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		for what, arg := range map[string]any{
			"plan":     p,
			"*plan":    *p,
			"host env": p.HostEnv,
			"in error": fmt.Errorf("run %v: %w", p, errors.New("failed")),
			"value":    e,
			"in slice": []any{p},
		} {
			got := fmt.Sprintf(f, arg)
			for _, secret := range []string{token, caKey, "SECRETtoken", "BEGIN PRIVATE"} {
				if strings.Contains(got, secret) || strings.Contains(got, fmt.Sprintf("%x", secret)) || strings.Contains(got, fmt.Sprintf("%X", secret)) {
					t.Errorf("Sprintf(%q, %s) shows the value of a host variable: %.300s", f, what, got)
					break
				}
			}
		}
	}
	if got := fmt.Sprintf("%v", p.HostEnv); !strings.Contains(got, "API_TOKEN") {
		t.Errorf("Sprintf(%%v, HostEnv) = %q, want the variables' names", got)
	}
	if p.HostEnv["API_TOKEN"] != token {
		t.Errorf("HostEnv[API_TOKEN] = %q, want the value kept for Run", p.HostEnv["API_TOKEN"])
	}
}
