package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/plan"
	"github.com/devsandbox/devsandbox/proxy/ca"
	"github.com/devsandbox/devsandbox/proxy/handoff"
)

// proxyBinary is the session proxy's program, installed next to devsandbox. It is a
// separate binary so that devsandbox does not link the proxy (see cmd/devsandbox-proxy
// for the contract).
const proxyBinary = "devsandbox-proxy"

// proxyExitBound is how long the end of a run waits for devsandbox-proxy to flush its
// audit log and exit (it gives requests in flight 2 s) before killing it.
const proxyExitBound = 3 * time.Second

// sessionID names one run (proxy socket, audit records).
func sessionID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// proxySocket returns where the session proxy listens: in the plan's socket directory.
func proxySocket(p *isolator.Plan, session string) string {
	return filepath.Join(p.Egress.SocketDir, "proxy-"+session+".sock")
}

// CABundlePath is where the sandbox finds the CA bundle under proxy.mitm: the system's
// CAs and the project's proxy CA.
const CABundlePath = "/run/devsandbox/ca-bundle.pem"

// caBundleEnv are the variables that point the common clients at CABundlePath:
// OpenSSL and Go (SSL_CERT_FILE), Node (NODE_EXTRA_CA_CERTS), Python requests, curl,
// git, pip, the AWS CLI and SDKs, and cargo.
var caBundleEnv = []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
	"GIT_SSL_CAINFO", "PIP_CERT", "AWS_CA_BUNDLE", "CARGO_HTTP_CAINFO"}

// proxyPlan is what planProxy decided that startProxy hands to devsandbox-proxy.
type proxyPlan struct {
	session      string
	ca           *ca.CA   // nil unless proxy.mitm
	placeholders []string // by credential; "" for one without placeholder_env
}

// planProxy points the plan at the session proxy and gives the sandbox its proxy
// environment. Under proxy.mitm it loads (or, on first use, creates) the project's CA
// in the state directory and adds the CA bundle and its variables; for each credential
// with a placeholder_env it adds that variable as a secret holding a fresh random
// placeholder. It starts nothing (so --dry-run can use it).
func planProxy(p *isolator.Plan, cfg *config.Config, session string) (*proxyPlan, error) {
	pp := &proxyPlan{session: session}
	p.Egress.Proxy = egress.Endpoint{Unix: proxySocket(p, session)}
	// Names, not values: the credentials' sources are named, never read here.
	pol, _ := json.Marshal(cfg.Proxy)
	sum := sha256.Sum256(pol)
	p.Egress.ProxyPolicy = hex.EncodeToString(sum[:8])
	env := egress.ProxyEnv("http://" + egress.SandboxProxyAddr)
	if cfg.Proxy.MITM {
		c, err := ca.LoadOrCreate(p.StateDir, p.Project.Name, time.Now())
		if err != nil {
			return nil, fmt.Errorf("%w: proxy.mitm: %v", isolator.ErrProtection, err)
		}
		pp.ca = c
		p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Data, Dest: CABundlePath,
			Content: ca.Bundle(systemBundle(cfg.Host), c.CertPEM), Why: "CA bundle with the proxy's CA (proxy.mitm)"})
		if isolator.NewView(p).CheckRead(filepath.Join(p.StateDir, ca.FileName)) == nil {
			// A bind or system_binds = ["host"] shows the state directory: hide the key.
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.MaskFile, Dest: filepath.Join(p.StateDir, ca.FileName), Why: "proxy CA key"})
		}
		for _, n := range caBundleEnv {
			env[n] = CABundlePath
		}
	}
	setEnv(p, env)
	p.HostEnv = maps.Clone(p.HostEnv) // the config's host variables stay as they were read
	if p.HostEnv == nil {
		p.HostEnv = map[string]string{}
	}
	for i, cr := range cfg.Proxy.Credentials {
		pp.placeholders = append(pp.placeholders, "")
		if cr.PlaceholderEnv == "" {
			continue
		}
		// The placeholder is a secret of the plan: the sandbox gets it in its
		// environment like any env secret, never in argv or --dry-run.
		pp.placeholders[i] = newPlaceholder()
		p.HostEnv[handoff.PlaceholderEnv(i)] = pp.placeholders[i]
		p.Env = slices.DeleteFunc(p.Env, func(e isolator.EnvVar) bool { return e.Name == cr.PlaceholderEnv })
		p.Secrets = slices.DeleteFunc(p.Secrets, func(s isolator.Secret) bool { return s.Name == cr.PlaceholderEnv && !s.AsFile })
		p.Secrets = append(p.Secrets, isolator.Secret{Name: cr.PlaceholderEnv, EnvSource: handoff.PlaceholderEnv(i)})
	}
	return pp, nil
}

// setEnv sets env in the plan's environment, replacing variables of the same names.
func setEnv(p *isolator.Plan, env map[string]string) {
	byName := map[string]int{}
	for i, e := range p.Env {
		byName[e.Name] = i
	}
	for name, v := range env {
		if i, ok := byName[name]; ok {
			p.Env[i] = isolator.EnvVar{Name: name, Value: v}
			continue
		}
		p.Env = append(p.Env, isolator.EnvVar{Name: name, Value: v})
	}
	sort.Slice(p.Env, func(i, j int) bool { return p.Env[i].Name < p.Env[j].Name })
}

// newPlaceholder is a credential's stand-in: random, so the proxy can tell it from
// anything else a request carries, and worthless outside this session.
func newPlaceholder() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return "devsandbox-placeholder-" + hex.EncodeToString(b[:])
}

// systemBundle is the CA bundle the sandbox's bundle starts from: the host's
// SSL_CERT_FILE when set, else the first system bundle found; nil when none is.
func systemBundle(h config.Host) []byte {
	paths := ca.SystemBundles()
	if f := h.Vars["SSL_CERT_FILE"]; filepath.IsAbs(f) {
		paths = append([]string{f}, paths...)
	}
	for _, f := range paths {
		if b, err := os.ReadFile(f); err == nil {
			return b
		}
	}
	return nil
}

// proxyArgs is devsandbox-proxy's argv after the program name. The policy: the
// Plan's rules (egress.allow plus the enabled tools' hosts, egress.deny), and proxy.default (deny in
// allowlist mode, where only what is listed passes); an entry given twice is passed
// once. The audit log goes to the project's state directory. proxy.git_push becomes
// one --git-push per pattern, and proxy.git_ssh --git-ssh.
func proxyArgs(p *isolator.Plan, cfg *config.Config, session string) []string {
	def := cfg.Proxy.Default
	if p.Egress.Mode == egress.Allowlist {
		def = "deny"
	}
	args := []string{"--session=" + session, "--log-dir=" + p.StateDir, "--default=" + def}
	if cfg.Proxy.MITM {
		args = append(args, "--mitm")
	}
	seen := map[string]bool{}
	add := func(arg string) {
		if !seen[arg] {
			seen[arg] = true
			args = append(args, arg)
		}
	}
	for _, e := range append(append([]egress.Entry{}, p.Egress.Allow...), p.Egress.ProxyAllow...) {
		add("--allow=" + e.String())
	}
	for _, e := range p.Egress.Deny {
		add("--deny=" + e.String())
	}
	for _, pat := range cfg.Proxy.GitPush {
		add("--git-push=" + pat)
	}
	if cfg.Proxy.GitSSH {
		args = append(args, "--git-ssh")
	}
	for i, cr := range cfg.Proxy.Credentials {
		name := cr.PlaceholderEnv
		if name == "" {
			name = fmt.Sprintf("proxy.credentials[%d]", i)
		}
		hc := handoff.Credential{Name: name, Host: cr.Host, Header: cr.Header, Format: cr.Format, ValueEnv: handoff.ValueEnv(i)}
		if cr.PlaceholderEnv != "" {
			hc.PlaceholderEnv = handoff.PlaceholderEnv(i)
		}
		args = append(args, "--credential="+hc.String())
	}
	return args
}

// startProxy binds the plan's proxy socket and starts devsandbox-proxy, from next to
// this binary, serving it. It does not wait for the proxy to be ready: the socket
// listens from the start, so the sandbox's first connections queue until it accepts.
// stop ends the proxy (it flushes the audit log), waits for it and removes the socket.
func startProxy(p *isolator.Plan, cfg *config.Config, pp *proxyPlan) (stop func(), err error) {
	bin, err := besideSelf(proxyBinary)
	if err != nil {
		return nil, err
	}
	env, err := proxyEnv(cfg, pp, os.ReadFile)
	if err != nil {
		return nil, err
	}
	return spawnProxy(bin, proxyArgs(p, cfg, pp.session), env, p.Egress.Proxy.Unix, proxyExitBound)
}

// proxyEnv is devsandbox-proxy's whole environment: the CA and the credentials'
// values and placeholders (the secrets its flags name but never hold), and the host's
// SSL_CERT_FILE and SSL_CERT_DIR, which choose the roots it checks upstream servers
// against. Nothing else of devsandbox's environment reaches it.
func proxyEnv(cfg *config.Config, pp *proxyPlan, readFile func(string) ([]byte, error)) ([]string, error) {
	var env []string
	for _, n := range []string{"SSL_CERT_FILE", "SSL_CERT_DIR"} {
		if v, ok := cfg.Host.Vars[n]; ok {
			env = append(env, n+"="+v)
		}
	}
	if pp.ca != nil {
		env = append(env, handoff.CAEnv+"="+string(pp.ca.PEM()))
	}
	for i, cr := range cfg.Proxy.Credentials {
		v, ok := cfg.Host.Vars[cr.ValueEnv]
		if cr.ValueFile != "" {
			b, err := readFile(cr.ValueFile)
			if err != nil {
				return nil, fmt.Errorf("%w: proxy.credentials[%d].value_file: %v", plan.ErrConfig, i, err)
			}
			v, ok = strings.TrimSpace(string(b)), true
		}
		if ok {
			env = append(env, handoff.ValueEnv(i)+"="+v)
		}
		if pp.placeholders[i] != "" {
			env = append(env, handoff.PlaceholderEnv(i)+"="+pp.placeholders[i])
		}
	}
	return env, nil
}

// besideSelf is the path of the program name installed next to this binary; a
// missing one is a broken installation.
func besideSelf(name string) (string, error) {
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return "", fmt.Errorf("finding the devsandbox binary: %w", err)
	}
	bin := filepath.Join(filepath.Dir(self), name)
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%w: the egress proxy %s is missing (%v); it is installed with devsandbox: reinstall devsandbox (make install, or scripts/install.sh), or run with --egress=open or --egress=none",
			isolator.ErrProtection, bin, err)
	}
	return bin, nil
}

// spawnProxy binds sock and starts bin with args and the environment env (nothing else)
// serving it, per the contract of cmd/devsandbox-proxy: the listening socket as fd 3, the lifeline's read end as fd 4,
// Pdeathsig SIGTERM, its own process group (a Ctrl-C meant for the command does not
// reach it). devsandbox keeps the lifeline's write end: when devsandbox exits, however
// it exits, the proxy sees end of file.
//
// Only the socket is made before spawnProxy returns; the fork and exec happen in the
// background, off the launch path. If they fail, the error is printed and the socket
// stops listening, so the sandbox's connections are refused: egress fails closed.
// stop closes the lifeline and waits for the proxy, killing it after bound, then
// removes the socket.
func spawnProxy(bin string, args, env []string, sock string, bound time.Duration) (stop func(), err error) {
	lnFile, err := listenProxySocket(sock)
	if err != nil {
		return nil, fmt.Errorf("%w: the egress proxy cannot listen on %s: %v", isolator.ErrProtection, sock, err)
	}
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		lnFile.Close()
		os.Remove(sock)
		return nil, fmt.Errorf("%w: starting the egress proxy: %v", isolator.ErrProtection, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.ExtraFiles = []*os.File{lnFile, lifeR}
	cmd.Env = append([]string{}, env...) // exactly env, never devsandbox's own (nil would inherit it)
	cmd.Stderr = os.Stderr               // its start-up failures; it prints nothing else
	cmd.SysProcAttr = proxySysProcAttr()
	cmd.Cancel = lifeW.Close // the lifeline ends: the proxy shuts down and exits
	cmd.WaitDelay = bound

	done := make(chan struct{})
	go func() {
		defer close(done)
		// Pdeathsig fires when the thread that forked the child exits, not the
		// process: fork from a locked thread that lives until the proxy has exited.
		runtime.LockOSThread()
		err := cmd.Start()
		lnFile.Close() // the proxy has its own copies now (or, on error, nobody listens)
		lifeR.Close()
		if err != nil {
			if ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "devsandbox: the egress proxy did not start (%v); the sandbox's connections through it are refused\n", err)
			}
			return
		}
		_ = cmd.Wait()
	}()
	return func() {
		cancel()
		<-done // Wait is bounded by WaitDelay: then the proxy is killed
		lifeW.Close()
		os.Remove(sock)
	}, nil
}

// listenProxySocket binds a Unix socket at path, mode 0600, in a directory only this
// user can enter, and returns its listening descriptor. The socket exists, and
// queues connections, from here on.
func listenProxySocket(path string) (*os.File, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// Between bind and chmod the socket has the umask's mode; the private directory
	// keeps everyone else out meanwhile. Chmod fails on a directory that is not ours.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false) // the socket outlives this listener; stop removes it
	defer ln.Close()           // File returns a duplicate
	if err := os.Chmod(path, 0o600); err != nil {
		os.Remove(path)
		return nil, err
	}
	f, err := ln.File()
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	return f, nil
}

// removeStaleSockets removes what sessions that died without cleaning up (kill -9)
// left in the socket directory: proxy sockets nothing accepts on any more (a
// connection is refused), and publish directories older than a minute none of whose
// sockets accepts (a younger one may belong to a session still starting).
func removeStaleSockets(dir string) {
	names, _ := filepath.Glob(filepath.Join(dir, "proxy-*.sock"))
	for _, n := range names {
		if stale(n) {
			_ = os.Remove(n)
		}
	}
	pubs, _ := filepath.Glob(filepath.Join(dir, "publish-*"))
	for _, d := range pubs {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() || time.Since(fi.ModTime()) < time.Minute {
			continue
		}
		socks, _ := filepath.Glob(filepath.Join(d, "*.sock"))
		if !slices.ContainsFunc(socks, func(s string) bool { return !stale(s) }) {
			_ = os.RemoveAll(d)
		}
	}
}

// stale reports whether the Unix socket at path refuses connections (nobody serves it).
func stale(path string) bool {
	c, err := net.DialTimeout("unix", path, 100*time.Millisecond)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}
