//go:build integration

package integration

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// healthSteal is an image's HEALTHCHECK: it searches the memory of every process of
// the container it runs in for a credential-shaped value and leaves what it found in the
// endpoint volume (/ep in the companion, /run/devsandbox/ep in the sandbox), and
// marks /tmp wherever it ran.
const healthSteal = `import os, re
open('/tmp/hc-ran', 'w').write('ran\n')
found, errs = set(), []
for pid in [d for d in os.listdir('/proc') if d.isdigit() and d != str(os.getpid())]:
    try:
        mem = os.open('/proc/%s/mem' % pid, os.O_RDONLY)
        for l in open('/proc/%s/maps' % pid).read().splitlines():
            a, perm = l.split()[:2]
            if 'r' not in perm:
                continue
            s, e = [int(x, 16) for x in a.split('-')]
            try:
                b = os.pread(mem, e - s, s)
            except OSError:
                continue
            found.update(m.decode() for m in re.findall(rb'DSBRT5-[0-9a-f]{16}', b))
        os.close(mem)
    except Exception as ex:
        errs.append('%s: %r' % (pid, ex))
res = 'LOOT ' + ' '.join(sorted(found)) + ' ERRS ' + '; '.join(errs)
if os.path.isdir('/ep'):
    open('/ep/loot', 'w').write(res + '\n')
print(res)
`

// An image is anyone's (a base pulled from a registry; docker.image may come from a
// trusted project file), and its config carries more than files: a HEALTHCHECK is a
// command the engine runs, on its own schedule, in every container made from the
// image that does not override it. devsandbox makes its companion (the proxy holding
// the credentials' values and the MITM CA's key), its firewall helper (root with
// NET_ADMIN in the sandbox's network namespace) and the sandbox itself from the
// derived image. In the companion the check runs as the proxy's user, beside it: it
// reads the proxy's memory and hands the values to the sandbox through the endpoint
// volume they share. In the sandbox it runs outside the init (no syscall policy, not
// one of the session's processes).
func TestImageHealthcheckNeverRuns(t *testing.T) {
	forEachDockerRootless(t, func(t *testing.T, iso string) {
		// Each engine builds its own image and runs its own project: the variants'
		// image builds and the windows below overlap.
		t.Parallel()
		dir := t.TempDir()
		tag := "devsandbox-test/rt5-health:" + randHex(4)
		t.Cleanup(func() {
			if ids, err := dockerCmd(iso, "images", "-q", "--filter", "label=dev.devsandbox.base-ref="+tag).Output(); err == nil && len(ids) > 0 {
				_ = dockerCmd(iso, append([]string{"rmi", "-f"}, strings.Fields(string(ids))...)...).Run()
			}
			_ = dockerCmd(iso, "rmi", "-f", tag).Run()
		})
		df := "FROM devsandbox-test/debian:3\nCOPY steal.py /usr/local/lib/steal.py\n" +
			"HEALTHCHECK --interval=200ms --timeout=5s --retries=1000 CMD [\"python3\", \"/usr/local/lib/steal.py\"]\n"
		for name, content := range map[string]string{"Dockerfile": df, "steal.py": healthSteal} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := dockerCmd(iso, "build", "-q", "-t", tag, dir).CombinedOutput(); err != nil {
			t.Fatalf("building the image: %v\n%s", err, out)
		}
		p := newProject(t)
		cfg := p.writeConfig(iso, "cfg.toml", `[docker]
image = "`+tag+`"
[proxy]
mitm = true
[[proxy.credentials]]
host = "api.example.test"
header = "X-Api-Key"
value_env = "DSB_RT5_KEY"
placeholder_env = "DSB_RT5_PH"
`)
		var rnd [8]byte
		_, _ = rand.Read(rnd[:])
		secret := "DSBRT5-" + hex.EncodeToString(rnd[:])
		// The check runs every 200 ms once the container is up: 3 s is fifteen chances.
		script := `i=0; while [ $i -lt 30 ] && ! [ -s /run/devsandbox/ep/loot ]; do sleep 0.1; i=$((i+1)); done
			echo "loot $(cat /run/devsandbox/ep/loot 2>/dev/null)"; echo "sandbox-check $(cat /tmp/hc-ran 2>/dev/null)"`
		for _, mode := range [][]string{nil, {"--keep-container"}} {
			args := append([]string{"--isolator=" + iso, "--config", cfg, "--egress=proxy"}, mode...)
			r := run(t, p.dir, []string{"DSB_RT5_KEY=" + secret}, "", append(args, "--", "/bin/sh", "-c", script)...)
			if r.code != 0 {
				t.Fatalf("the run %v:\n%s", mode, r)
			}
			if strings.Contains(r.stdout, secret) || strings.Contains(r.stdout, "LOOT") || strings.Contains(r.stdout, "ran") {
				t.Errorf("the image's HEALTHCHECK ran in devsandbox's containers (the companion's memory, credential values included, or the sandbox outside its init), run %v: want it never run, got:\n%s", mode, r)
			}
		}
		// The window above can miss a check the engine delays; the kept containers
		// (the sandbox and its companion) say it outright: the check is off in their
		// config, and the engine keeps no health state for them.
		id := strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")
		kept := strings.Fields(dockerAt(t, iso, "ps", "-q", "--no-trunc", "--filter", "label=dev.devsandbox.project="+id))
		if len(kept) < 2 {
			t.Fatalf("want the kept container and its companion running, have %q", kept)
		}
		for _, c := range kept {
			if got := dockerAt(t, iso, "inspect", "--format", `{{if .Config.Healthcheck}}{{json .Config.Healthcheck.Test}}{{end}} {{if .State.Health}}health:{{.State.Health.Status}}{{else}}no-health{{end}}`, c); got != `["NONE"] no-health` {
				t.Errorf("kept container %s: want the image's HEALTHCHECK off (Test NONE, no health state), have %s", c[:12], got)
			}
		}
	})
}
