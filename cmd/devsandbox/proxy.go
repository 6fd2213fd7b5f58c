package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/proxy"
)

// sessionID names one run (proxy socket, audit records).
func sessionID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// proxySocket returns where the session proxy listens: a private directory under
// $XDG_RUNTIME_DIR, else under the state dir (Unix socket paths are limited to 107
// bytes, so a short fallback is used when needed).
func proxySocket(h config.Host, p *isolator.Plan, session string) string {
	name := "proxy-" + session + ".sock"
	if h.RuntimeDir != "" {
		if s := filepath.Join(h.RuntimeDir, "devsandbox", name); len(s) < 100 {
			return s
		}
	}
	if s := filepath.Join(p.StateDir, name); len(s) < 100 {
		return s
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("devsandbox-%d", h.UID), name)
}

// planProxy points the plan at the session proxy and gives the sandbox its proxy
// environment. It starts nothing (so --dry-run can use it).
func planProxy(p *isolator.Plan, cfg *config.Config, session string) {
	p.Egress.Proxy = egress.Endpoint{Unix: proxySocket(cfg.Host, p, session)}
	env := egress.ProxyEnv("http://" + egress.SandboxProxyAddr)
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

// startProxy starts the filtering proxy of the session on the plan's socket. Its
// policy: egress.allow plus the enabled tools' hosts, egress.deny, and proxy.default
// (deny in allowlist mode, where only what is listed passes). stop shuts it down and
// flushes the audit log.
func startProxy(p *isolator.Plan, cfg *config.Config, session string) (stop func(), err error) {
	allow := append([]string{}, cfg.Egress.Allow...)
	for _, e := range p.Egress.ProxyAllow {
		allow = append(allow, e.String())
	}
	def := cfg.Proxy.Default
	if p.Egress.Mode == egress.Allowlist {
		def = "deny"
	}
	pol, err := proxy.NewPolicy(allow, cfg.Egress.Deny, def)
	if err != nil {
		return nil, fmt.Errorf("egress policy: %w", err)
	}
	srv, err := proxy.New(proxy.Config{Policy: pol, Session: session, LogDir: p.StateDir})
	if err != nil {
		return nil, fmt.Errorf("starting the egress proxy: %w", err)
	}
	sock := p.Egress.Proxy.Unix
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		return nil, fmt.Errorf("creating the proxy socket directory: %w", err)
	}
	if err := srv.ListenUnix(sock); err != nil {
		return nil, fmt.Errorf("%w: the egress proxy cannot listen on %s: %v", isolator.ErrProtection, sock, err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = os.Remove(sock)
	}, nil
}
