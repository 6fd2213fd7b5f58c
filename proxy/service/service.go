// Package service runs the session's filtering proxy for a Plan: it binds the proxy's
// Unix socket and starts devsandbox-proxy, the program that links the proxy (whose
// HTTP stack's package initialisation would slow every launch), handing it Settings
// through package handoff. The secrets (the MITM CA's key, credential values and
// placeholders) travel in devsandbox-proxy's environment, which is exactly the
// variables Environ lists; Settings name them and never hold one.
//
// It imports nothing of the proxy's HTTP stack; see deps_test.go in cmd/devsandbox.
package service

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/internal/buildstamp"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/handoff"
)

// Program is the proxy's program, installed next to devsandbox.
const Program = "devsandbox-proxy"

// Settings are what devsandbox-proxy serves by: the Plan's proxy configuration and
// egress rules, with its secrets' variables named.
type Settings struct {
	Session string `json:"session"`
	// LogDir is the audit log's directory ("": keep no log).
	LogDir  string `json:"logDir"`
	Default string `json:"default"` // allow or deny
	// Allow are the Plan's Allow and ProxyAllow entries, each once; Deny its Deny.
	Allow []egress.Entry `json:"allow,omitempty"`
	Deny  []egress.Entry `json:"deny,omitempty"`
	// GitPush and GitSSH are the push policy (none: no policy).
	GitPush []egress.RefPattern `json:"gitPush,omitempty"`
	GitSSH  bool                `json:"gitSSH,omitempty"`
	// MITM decrypts HTTPS with the CA in the variable CAVar.
	MITM        bool         `json:"mitm,omitempty"`
	Credentials []Credential `json:"credentials,omitempty"`
	// Listeners: descriptor handoff.FirstExtraFD+1 is the proxy's end of a listener
	// channel (NewListenerChannel); it serves every listening socket handed on it.
	Listeners bool `json:"listeners,omitempty"`
	// NoSocket: there is no Unix socket; descriptor handoff.FirstExtraFD is the
	// listener channel, and the proxy serves only what is handed on it.
	NoSocket bool `json:"noSocket,omitempty"`
}

// CAVar is the variable of devsandbox-proxy's environment holding the MITM CA.
const CAVar = isolator.ProxyCAVar

// Credential is one credential: its public fields and the variables of
// devsandbox-proxy's environment holding its secrets.
type Credential struct {
	Name   string `json:"name"` // the in-sandbox variable, or the config key, for messages
	Host   string `json:"host"` // [https:// | http://] egress entry
	Header string `json:"header"`
	Format string `json:"format,omitempty"`
	// ValueVar holds the value; unset, the credential adds nothing.
	ValueVar string `json:"valueVar"`
	// PlaceholderVar, when set, holds the placeholder the sandbox was given.
	PlaceholderVar string `json:"placeholderVar,omitempty"`
}

// valueVar is the variable holding credential i's value.
func valueVar(i int) string { return "DEVSANDBOX_CREDENTIAL_" + strconv.Itoa(i) }

// SettingsOf returns the settings of p's proxy. The audit log goes to the project's
// state directory.
func SettingsOf(p *isolator.Plan) Settings {
	s := Settings{Session: p.Proxy.Session, LogDir: p.StateDir, Default: p.Proxy.Default,
		GitPush: p.Proxy.GitPush, GitSSH: p.Proxy.GitSSH, MITM: p.Proxy.MITM}
	for _, e := range slices.Concat(p.Egress.Allow, p.Egress.ProxyAllow) {
		if !slices.Contains(s.Allow, e) {
			s.Allow = append(s.Allow, e)
		}
	}
	s.Deny = slices.Clone(p.Egress.Deny)
	for i, c := range p.Proxy.Credentials {
		s.Credentials = append(s.Credentials, Credential{Name: c.Name, Host: c.Host, Header: c.Header, Format: c.Format,
			ValueVar: valueVar(i), PlaceholderVar: c.PlaceholderVar})
	}
	return s
}

// Environ is devsandbox-proxy's whole environment for p: the CA and the credentials'
// values (read from value_file now) and placeholders, and the host's SSL_CERT_FILE and
// SSL_CERT_DIR, which choose the roots it checks upstream servers against. Nothing
// else of devsandbox's environment reaches it.
func Environ(p *isolator.Plan, readFile func(string) ([]byte, error)) ([]string, error) {
	var env []string
	for _, n := range []string{"SSL_CERT_FILE", "SSL_CERT_DIR"} {
		if v, ok := p.HostEnv[n]; ok {
			env = append(env, n+"="+v)
		}
	}
	if p.Proxy.MITM {
		pem, ok := p.HostEnv[isolator.ProxyCAVar]
		if !ok {
			return nil, fmt.Errorf("%w: proxy.mitm: the plan holds no CA", isolator.ErrProtection)
		}
		env = append(env, CAVar+"="+pem)
	}
	for i, c := range p.Proxy.Credentials {
		v, ok := p.HostEnv[c.ValueEnv]
		if c.ValueFile != "" {
			b, err := readFile(c.ValueFile)
			if err != nil {
				return nil, fmt.Errorf("%w: proxy.credentials[%d].value_file: %w", isolator.ErrConfig, i, err)
			}
			v, ok = strings.TrimSpace(string(b)), true
		}
		if ok {
			env = append(env, valueVar(i)+"="+v)
		}
		if c.PlaceholderVar != "" && !slices.Contains(env, c.PlaceholderVar+"="+p.HostEnv[c.PlaceholderVar]) {
			env = append(env, c.PlaceholderVar+"="+p.HostEnv[c.PlaceholderVar]) // once: credentials may share it
		}
	}
	return env, nil
}

// binary is devsandbox-proxy next to the running program, else next to the plan's
// init (p.Self: a program that embeds the isolators runs from elsewhere, with the
// plan pointing at an installed devsandbox); a missing one is a broken installation.
func binary(p *isolator.Plan) (string, error) {
	if bin := handoff.Beside(Program); bin != "" {
		return bin, buildstamp.CheckSelf(Program, bin)
	}
	if p.Self != "" {
		bin := filepath.Join(filepath.Dir(p.Self), Program)
		if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
			return bin, buildstamp.CheckSelf(Program, bin)
		}
	}
	return "", fmt.Errorf("%w: the egress proxy %s is not installed next to devsandbox; it is installed with devsandbox: reinstall devsandbox (make install, or scripts/install.sh), or run with --egress=open or --egress=none",
		isolator.ErrProtection, Program)
}
