//go:build integration

package integration

import (
	"io"
	"net"
	"slices"
	"strings"
	"testing"
)

// plainFront serves the stand-in engine over plain TCP (no TLS) at ip:PORT until
// the test ends, relaying each connection to its socket, and returns the
// tcp:// address.
func plainFront(t *testing.T, ip string) string {
	return recordedFront(t, ip, nil)
}

// recordedFront is plainFront that also writes what the clients send to sent (nil:
// nowhere): what anyone on the way reads.
func recordedFront(t *testing.T, ip string, sent io.Writer) string {
	t.Helper()
	sock, ok := strings.CutPrefix(remoteEngine, "unix://")
	if !ok {
		t.Fatalf("the stand-in's address is not a Unix socket: %s", remoteEngine)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go relayFront(l, sock, sent)
	return "tcp://" + l.Addr().String()
}

// nonLoopbackIP is an IPv4 address of an interface of this host that is up and not
// loopback: devsandbox judges an engine address by its host part, so a front there
// is, to devsandbox, an engine over the network.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
				return n.IP.String()
			}
		}
	}
	t.Fatal("this host has no non-loopback IPv4 address to serve a plain TCP engine on")
	return ""
}

// An engine over plain TCP: doctor says so and warns; a run that would send a
// secret is refused (125) before anything of it reaches the engine, naming the
// fix and not the value; a run without one goes ahead with the warning; over
// loopback (this machine) a run with a secret goes ahead, warned of.
func TestPlainTCPEngine(t *testing.T) {
	if !slices.Contains(isolators(), remoteDocker) {
		t.Skip("docker-remote is not among DEVSANDBOX_IT_ISOLATORS")
	}
	requireEngine(t, remoteDocker)
	remote := plainFront(t, nonLoopbackIP(t))
	local := plainFront(t, "127.0.0.1")
	p := newProject(t)
	const value = "s3cr3t-PLAIN-7373"
	host := func(h string) []string { return []string{"DOCKER_HOST=" + h, "API_TOKEN=" + value} }

	r := run(t, p.dir, append(host(remote), "DEVSANDBOX_ISOLATOR=docker"), "", "doctor")
	t.Logf("devsandbox doctor against %s:\n%s", remote, r.stdout)
	if got, want := doctorRow(r.stdout, "docker engine"), "; reached over plain TCP: unencrypted and unauthenticated; anyone who reaches the port controls the engine (root on its host) and reads what devsandbox sends it"; !strings.HasPrefix(got, "active  "+remote+" (DOCKER_HOST), Docker ") || !strings.HasSuffix(got, want) {
		t.Errorf("doctor's docker engine row:\n%q\nwant active, ending\n%q", got, want)
	}
	if got := doctorRow(r.stdout, "docker engine channel"); !strings.HasPrefix(got, "warning  plain TCP: ") || !strings.Contains(got, "a run that would send a secret, a variable taken for a credential (env.passthrough or env.set: by its name or its value's form), a proxy credential or the ssh agent is refused, and so is one that would send, as the content of a project file (.git/config and the files it includes, .envrc and the other files host tools run), a setting taken for a credential") {
		t.Errorf("doctor's docker engine channel row: %q\n%s", got, r)
	}

	r = run(t, p.dir, host(remote), "", "--isolator=docker-remote", "-e", "API_TOKEN", "--", "echo", "ran")
	if want := "is reached over plain TCP, unencrypted and unauthenticated, and this run would send it 1 secret(s) in clear"; r.code != 125 || !strings.Contains(r.stderr, want) || strings.Contains(r.stdout, "ran") {
		t.Errorf("a run with a secret over plain TCP: want 125 and %q\n%s", want, r)
	}
	if !strings.Contains(r.stderr, "DOCKER_TLS_VERIFY=1") {
		t.Errorf("the refusal does not name the fix:\n%s", r)
	}
	if strings.Contains(r.stdout+r.stderr, value) {
		t.Errorf("the secret's value in the output:\n%s", r)
	}

	// A credential passed through by value (env.passthrough) travels in the create
	// request's Env, in clear: refused as a secret is, by its name (API_TOKEN) or by a
	// token's form in its value (BUILD_NOTE, a GitHub token), naming the variable only.
	p.write("pass.toml", "[env]\npassthrough = [\"API_TOKEN\", \"BUILD_NOTE\", \"BUILD_MODE\"]\n")
	cfg := p.path("pass.toml")
	const ghToken = "ghp_0123456789abcdefPLAIN7373"
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"API_TOKEN", host(remote), "the host variable API_TOKEN"},
		{"BUILD_NOTE", []string{"DOCKER_HOST=" + remote, "BUILD_NOTE=" + ghToken}, "the host variable BUILD_NOTE"},
	} {
		r = run(t, p.dir, append(tc.env, "BUILD_MODE=fast"), "", "--isolator=docker-remote", "--config", cfg, "--", "echo", "ran")
		if r.code != 125 || !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, "DOCKER_TLS_VERIFY=1") || strings.Contains(r.stdout, "ran") {
			t.Errorf("env.passthrough of %s over plain TCP: want 125 naming it (%q) and the fix\n%s", tc.name, tc.want, r)
		}
		if strings.Contains(r.stdout+r.stderr, value) || strings.Contains(r.stdout+r.stderr, ghToken) || strings.Contains(r.stderr, "BUILD_MODE") {
			t.Errorf("env.passthrough of %s: a value, or a variable that is no credential, in the output:\n%s", tc.name, r)
		}
	}
	r = run(t, p.dir, append(host(local), "BUILD_MODE=fast"), "", "--isolator=docker-remote", "--config", cfg, "--", "sh", "-c", `test "$API_TOKEN" = `+value+` && echo "ran $BUILD_MODE"`)
	if r.code != 0 || r.stdout != "ran fast\n" {
		t.Errorf("env.passthrough of a credential over loopback plain TCP: want it to run, warned\n%s", r)
	}
	r = run(t, p.dir, []string{"DOCKER_HOST=" + remote, "BUILD_MODE=fast"}, "", "--isolator=docker-remote", "--config", cfg, "--", "sh", "-c", `echo "ran $BUILD_MODE"`)
	if r.code != 0 || r.stdout != "ran fast\n" {
		t.Errorf("env.passthrough of no credential over plain TCP: want it to run, warned\n%s", r)
	}

	const warned = "is reached over plain TCP over the network: the project's files and the sandbox's input and output cross unencrypted"
	r = run(t, p.dir, host(remote), "", "--isolator=docker-remote", "--", "echo", "ran")
	if r.code != 0 || r.stdout != "ran\n" || !strings.Contains(r.stderr, warned) {
		t.Errorf("a run without a secret over plain TCP: want it to run, warned (%q)\n%s", warned, r)
	}
	assertClearWarnings(t, "a run without a secret", r, 1)

	r = run(t, p.dir, host(local), "", "--isolator=docker-remote", "-e", "API_TOKEN", "--", "sh", "-c", `test "$API_TOKEN" = `+value+` && echo ran`)
	if r.code != 0 || r.stdout != "ran\n" || !strings.Contains(r.stderr, "is reached over plain TCP on this machine") {
		t.Errorf("a run with a secret over loopback plain TCP: want it to run, warned\n%s", r)
	}
	if strings.Contains(r.stdout+r.stderr, value) {
		t.Errorf("the secret's value in the output:\n%s", r)
	}
}
