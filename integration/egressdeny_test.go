//go:build integration

package integration

import (
	"fmt"
	"testing"
)

// TestEgressAllowlistDenyWins: under --egress=allowlist an egress.deny entry inside
// what an allow entry opens is refused by the firewall (deny wins over allow): the
// allow entry opens the outside host on every port, the deny entry takes 8081 back.
// The control is 8080 on the same host, reached.
func TestEgressAllowlistDenyWins(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	forEachIsolatorOf(t, withRootless(isolators()), func(t *testing.T, iso string) {
		p := newProject(t)
		cfg := p.writeConfig(iso, "deny.toml", fmt.Sprintf("[egress]\ndeny = [%q]\n", o.addr+":8081"))
		script := fmt.Sprintf(`for port in 8080 8081; do
	if curl -sf --noproxy '*' -m 3 http://%s:$port/ >/dev/null 2>&1; then echo "$port ok"; else echo "$port no"; fi
done`, o.addr)
		r := run(t, p.dir, nil, "", "--isolator="+iso, "--config", cfg, "--egress=allowlist", "--allow", o.addr, "--", "/bin/sh", "-c", script)
		if r.code != 0 || r.stdout != "8080 ok\n8081 no\n" {
			t.Fatalf("allow %s, deny %s:8081: want 8080 reached and 8081 refused:\n%s", o.addr, o.addr, r)
		}
	})
}
