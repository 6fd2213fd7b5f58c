package planner

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/sockdir"
	"github.com/devsandbox/devsandbox/proxy/ca/capem"
	"github.com/devsandbox/devsandbox/tools"
)

// CABundlePath is where the sandbox finds the CA bundle under proxy.mitm: the system's
// CAs and the project's proxy CA.
const CABundlePath = "/run/devsandbox/ca-bundle.pem"

// caBundleEnv are the variables that point the common clients at CABundlePath:
// OpenSSL and Go (SSL_CERT_FILE), Node (NODE_EXTRA_CA_CERTS), Python requests, curl,
// git, pip, the AWS CLI and SDKs, and cargo.
var caBundleEnv = []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
	"GIT_SSL_CAINFO", "PIP_CERT", "AWS_CA_BUNDLE", "CARGO_HTTP_CAINFO"}

// NewSession returns a new session id: it names one run's proxy socket, publish
// directory and audit records.
func NewSession() string {
	var b [6]byte
	random(b[:])
	return hex.EncodeToString(b[:])
}

// randomStd fills b from crypto/rand.
func randomStd(b []byte) { _, _ = rand.Read(b) }

// egressServices completes the Plan with what the host side of its egress needs: the
// project's socket directory (sockdir), the session's publish directory, the ssh agent
// relay and, in the proxy modes, the session proxy (planProxy).
func egressServices(p *isolator.Plan, cfg *config.Config, pr Probe, req Request) error {
	agent := agentMount(p)
	if len(p.Egress.Forwards) == 0 && !p.Egress.NeedsProxy() && agent == nil {
		return nil
	}
	h := cfg.Host
	choose := pr.SocketDir
	if choose == nil {
		choose = sockdir.Choose
	}
	tmp := h.Vars["TMPDIR"]
	var err error
	if p.Egress.SocketDir, err = choose(sockdir.Host{RuntimeDir: h.RuntimeDir, TempDir: tmp, UID: h.UID}, p.StateDir, p.Project.ID); err != nil {
		return err
	}
	session := req.Session
	if session == "" {
		session = NewSession()
	}
	// The session names the run's sockets and endpoints, with or without a proxy.
	p.Proxy.Session = session
	if len(p.Egress.Forwards) > 0 {
		p.Egress.PublishDir = sockdir.PublishDir(p.Egress.SocketDir, session)
	}
	if agent != nil {
		// The sandbox reaches the agent only through the session's filtering relay.
		p.SSHAgent = isolator.AgentRelay{Upstream: agent.Source, Socket: sockdir.AgentSocket(p.Egress.SocketDir, session)}
		agent.Source, agent.Anchor = p.SSHAgent.Socket, false
	}
	if p.Egress.NeedsProxy() {
		return planProxy(p, cfg, pr, req, session)
	}
	return nil
}

// agentMount returns the ssh tool's bind of the host's agent socket, or nil.
func agentMount(p *isolator.Plan) *isolator.Mount {
	for i := range p.Mounts {
		if m := &p.Mounts[i]; m.Kind == isolator.Bind && m.Dest == tools.AgentSocket {
			return m
		}
	}
	return nil
}

// planProxy points the plan at the session proxy and configures it, and gives the
// sandbox its proxy environment. Under proxy.mitm it loads (or, on first use and not
// under DryRun, creates) the project's CA in the state directory and adds the CA
// bundle and its variables; for each credential with a placeholder_env it adds that
// variable as a secret holding a fresh random placeholder.
func planProxy(p *isolator.Plan, cfg *config.Config, pr Probe, req Request, session string) error {
	p.Egress.Proxy = egress.Endpoint{Unix: sockdir.ProxySocket(p.Egress.SocketDir, session)}
	// Names, not values: the credentials' sources are named, never read here.
	sum := sha256.Sum256(policyJSON(cfg.Proxy))
	p.Egress.ProxyPolicy = hex.EncodeToString(sum[:8])
	pc := isolator.ProxyConfig{Session: session, Default: cfg.Proxy.Default, MITM: cfg.Proxy.MITM, GitSSH: cfg.Proxy.GitSSH}
	if p.Egress.Mode == egress.Allowlist {
		pc.Default = "deny" // only what is listed passes
	}
	for _, s := range cfg.Proxy.GitPush {
		rp, err := egress.ParseRefPattern(s)
		if err != nil {
			return fmt.Errorf("%w: proxy.git_push: %w", ErrConfig, err)
		}
		pc.GitPush = append(pc.GitPush, rp)
	}
	env := egress.ProxyEnv("http://" + egress.SandboxProxyAddr)
	p.HostEnv = maps.Clone(p.HostEnv) // the config's host variables stay as they were read
	if p.HostEnv == nil {
		p.HostEnv = map[string]string{}
	}
	if cfg.Proxy.MITM {
		if err := planCA(p, cfg.Host, pr, req); err != nil {
			return err
		}
		for _, n := range caBundleEnv {
			env[n] = CABundlePath
		}
	}
	setEnv(p, env)
	placeholderVars := map[string]string{} // by placeholder_env
	for i, cr := range cfg.Proxy.Credentials {
		if err := credentialFileExists(cfg, pr, i); err != nil {
			return err
		}
		c := isolator.ProxyCredential{Name: cr.PlaceholderEnv, Host: cr.Host, Header: cr.Header, Format: cr.Format, ValueEnv: cr.ValueEnv, ValueFile: cr.ValueFile}
		if c.Name == "" {
			c.Name = fmt.Sprintf("proxy.credentials[%d]", i)
		}
		if v, ok := placeholderVars[cr.PlaceholderEnv]; ok && cr.PlaceholderEnv != "" {
			// The sandbox's variable holds one placeholder: credentials naming the
			// same placeholder_env (a key held for two hosts) share it.
			c.PlaceholderVar = v
		} else if cr.PlaceholderEnv != "" {
			// The placeholder is a secret of the plan: the sandbox gets it in its
			// environment like any env secret, never in argv or --dry-run.
			c.PlaceholderVar = PlaceholderPrefix + strconv.Itoa(i)
			placeholderVars[cr.PlaceholderEnv] = c.PlaceholderVar
			p.HostEnv[c.PlaceholderVar] = req.placeholder(c.PlaceholderVar)
			p.Env = slices.DeleteFunc(p.Env, func(e isolator.EnvVar) bool { return e.Name == cr.PlaceholderEnv })
			p.Secrets = slices.DeleteFunc(p.Secrets, func(s isolator.Secret) bool { return s.Name == cr.PlaceholderEnv && !s.AsFile })
			p.Secrets = append(p.Secrets, isolator.Secret{Name: cr.PlaceholderEnv, EnvSource: c.PlaceholderVar})
		}
		pc.Credentials = append(pc.Credentials, c)
	}
	p.Proxy = pc
	return nil
}

// planCA adds the CA bundle the sandbox trusts (the system's CAs and the project's
// proxy CA, never its key) and hands the CA to the proxy through HostEnv. Under DryRun
// a missing CA is not created: the bundle then says where its certificate will be.
func planCA(p *isolator.Plan, h config.Host, pr Probe, req Request) error {
	load := pr.ProxyCA
	if load == nil {
		load = func(dir, name string, create bool) (*capem.File, error) {
			return loadCA(dir, name, create, pr.MakeProxyCA)
		}
	}
	c, err := load(p.StateDir, p.Project.Name, !req.DryRun)
	if err != nil {
		return fmt.Errorf("%w: proxy.mitm: %w", isolator.ErrProtection, err)
	}
	cert := []byte("# devsandbox: the project's proxy CA is created at its first run and appended here\n")
	certPart := isolator.ContentPart{Text: string(cert)}
	if c != nil {
		cert = c.CertPEM
		certPart = isolator.ContentPart{File: filepath.Join(p.StateDir, capem.FileName), CertOnly: true}
		p.HostEnv[isolator.ProxyCAVar] = string(c.PEM())
	}
	system, systemFile := systemBundle(h, pr)
	var parts []isolator.ContentPart
	if systemFile != "" {
		parts = append(parts, isolator.ContentPart{File: systemFile})
		if len(system) > 0 && system[len(system)-1] != '\n' {
			parts = append(parts, isolator.ContentPart{Text: "\n"}) // as capem.Bundle adds
		}
	}
	p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Data, Dest: CABundlePath,
		Content: capem.Bundle(system, cert), Parts: append(parts, certPart), Why: "CA bundle with the proxy's CA (proxy.mitm)"})
	if isolator.HostVisible(p, filepath.Join(p.StateDir, capem.FileName)) {
		// A bind or system_binds = ["host"] shows the state directory: hide the key.
		p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.MaskFile, Dest: filepath.Join(p.StateDir, capem.FileName), Why: "proxy CA key"})
	}
	return nil
}

// systemBundle is the CA bundle the sandbox's bundle starts from, and the file it was
// read from: the host's SSL_CERT_FILE when set, else the first system bundle found;
// nil and "" when none is.
func systemBundle(h config.Host, pr Probe) ([]byte, string) {
	paths := capem.SystemBundles()
	if f := h.Vars["SSL_CERT_FILE"]; filepath.IsAbs(f) {
		paths = append([]string{f}, paths...)
	}
	for _, f := range paths {
		if b, err := pr.ReadFile(f); err == nil {
			return b, f
		}
	}
	return nil, ""
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
	return placeholderValue + hex.EncodeToString(b[:])
}

// PlaceholderPrefix begins the name of the host-side variable that holds a
// credential's placeholder (PlaceholderPrefix + the credential's index): the sandbox's
// placeholder_env is a secret from it.
const PlaceholderPrefix = "DEVSANDBOX_PLACEHOLDER_"

// placeholderValue begins every placeholder.
const placeholderValue = "devsandbox-placeholder-"

// NewPlaceholder returns a fresh placeholder (24 random bytes), as Build makes one for
// each credential with a placeholder_env: for Request.Placeholders.
func NewPlaceholder() string { return newPlaceholder() }

// placeholder is the placeholder of the variable name for this launch: the one made
// before the plan (Placeholders) when it has a placeholder's form, else a new one.
func (r Request) placeholder(name string) string {
	v := r.Placeholders[name]
	if rest, ok := strings.CutPrefix(v, placeholderValue); ok && len(rest) == 48 && strings.Trim(rest, "0123456789abcdef") == "" {
		return v
	}
	return newPlaceholder()
}

// credentialFileExists refuses the Plan when the value_file of the i-th credential
// cannot be found: the proxy reads it at its start, which a run reaches only after
// the launch began (and --dry-run never does). The error names the entry with its
// file and line.
func credentialFileExists(cfg *config.Config, pr Probe, i int) error {
	f := cfg.Proxy.Credentials[i].ValueFile
	if f == "" || pr.Stat == nil {
		return nil
	}
	if _, err := pr.Stat(f); err != nil {
		from := fmt.Sprintf("proxy.credentials[%d].value_file", i)
		if o := cfg.EntryOrigin("proxy.credentials", strconv.Itoa(i)); o != "" {
			from += " (" + o + ")"
		}
		return fmt.Errorf("%w: %s: %s cannot be read (%w); fix the path, or remove the credential", ErrConfig, from, f, err)
	}
	return nil
}
