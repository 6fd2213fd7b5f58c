package planner

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/tools"
)

// minSecretLen is the shortest credential value looked for in other variables: a
// shorter one would match by accident.
const minSecretLen = 8

// credentialSecrets are the host variable names and the values of proxy.credentials:
// what the proxy adds to requests, and what must therefore never enter the sandbox.
// A value_env that is not set is reported in warns (the proxy then adds nothing).
func credentialSecrets(cfg *config.Config, h config.Host, pr Probe, warns []string) (names map[string]int, values map[string]int, _ []string) {
	names, values = map[string]int{}, map[string]int{}
	for i, c := range cfg.Proxy.Credentials {
		v := ""
		switch {
		case c.ValueEnv != "":
			names[c.ValueEnv] = i
			var ok bool
			if v, ok = h.Vars[c.ValueEnv]; !ok {
				warns = append(warns, fmt.Sprintf("proxy.credentials[%d]: %s is not set in the host environment; the proxy adds no %s for %s", i, c.ValueEnv, c.Header, c.Host))
			}
		case pr.ReadFile != nil:
			if b, err := pr.ReadFile(c.ValueFile); err == nil {
				v = strings.TrimSpace(string(b))
			}
		}
		if len(v) >= minSecretLen {
			values[v] = i
		}
	}
	return names, values, warns
}

// withholdCredentials removes from the sandbox's environment and env secrets every
// variable named as a credential's value_env, and every other one whose value holds a
// credential's value (a tool's GH_TOKEN holding the same token as GITHUB_TOKEN, say),
// with a warning for the latter. A credential's placeholder_env, when set, is added
// later, by whoever starts the proxy.
func withholdCredentials(p *isolator.Plan, cfg *config.Config, h config.Host, pr Probe, warns []string) []string {
	if len(cfg.Proxy.Credentials) == 0 {
		return warns
	}
	names, values, warns := credentialSecrets(cfg, h, pr, warns)
	if !p.Egress.NeedsProxy() {
		warns = append(warns, fmt.Sprintf("proxy.credentials apply only in the egress modes proxy and allowlist; in mode %s the proxy adds none, and their variables are still withheld from the sandbox", p.Egress.Mode))
	}
	holds := func(name, value string) bool {
		if _, ok := names[name]; ok {
			return true
		}
		for v, i := range values {
			if strings.Contains(value, v) {
				warns = append(warns, fmt.Sprintf("%s holds the value of proxy.credentials[%d]; it is withheld from the sandbox (the proxy adds the credential for %s)", name, i, cfg.Proxy.Credentials[i].Host))
				return true
			}
		}
		return false
	}
	p.Env = slices.DeleteFunc(p.Env, func(e isolator.EnvVar) bool { return holds(e.Name, e.Value) })
	p.Secrets = slices.DeleteFunc(p.Secrets, func(s isolator.Secret) bool {
		return !s.AsFile && holds(s.Name, h.Vars[s.EnvSource])
	})
	return warns
}

// credentialFiles are the value_file paths of proxy.credentials: masked wherever the
// sandbox would see them.
func credentialFiles(cfg *config.Config) []string {
	var out []string
	for _, c := range cfg.Proxy.Credentials {
		if c.ValueFile != "" {
			out = append(out, c.ValueFile)
		}
	}
	return out
}

// HeldKey is a tool's API key the proxy holds for the session (tools.<name>.key =
// "proxy"): the sandbox's Env holds a placeholder, and the proxy sets Header on
// requests to Host.
type HeldKey struct {
	Tool, Env, Host, Header string
}

// CheckTools refuses the [tools.<name>] tables of cfg that no host could honour: a
// tool reg does not know, whatever the table sets (a misspelt tools.<name>.secrets =
// false would otherwise withhold nothing), and key = "proxy" for a tool that declares
// no key (a protection asked for that cannot be applied). A run checks them in
// ToolKeys and `config validate` through ValidateFile, so the two cannot disagree.
func CheckTools(cfg *config.Config, reg *tools.Registry) error {
	for _, name := range slices.Sorted(maps.Keys(cfg.Tools)) {
		t, ok := reg.Lookup(name)
		if !ok {
			// Not ErrConfig: no host has the tool, so the name is wrong wherever it runs.
			return fmt.Errorf("%w: %w", config.ErrInvalid, unknownTool(cfg, reg, name))
		}
		if k := cfg.Tools[name].Key; k != nil && *k == config.KeyProxy && len(t.Keys) == 0 {
			// Not ErrConfig: no host has a key for the tool to hold, so the setting is
			// wrong wherever it runs.
			return fmt.Errorf("%w: %s: tools.%s.key = %q: %s has no API key for the proxy to hold (the tools that have one: %s); remove the setting, or pass %s's credentials with [[proxy.credentials]]", config.ErrInvalid, cfg.Origins["tools."+name+".key"], name, config.KeyProxy, name, strings.Join(keyedTools(reg), ", "), name)
		}
	}
	return nil
}

// ValidateFile checks the config file at path on its own, as `config validate FILE`
// does: everything a run with `--config path` refuses from the configuration alone,
// through the same functions (config.LoadFile, CheckTools). What depends on the host
// (paths that must exist, names that must resolve, keys in the environment) is left
// to the run.
func ValidateFile(path string, host config.Host, reg *tools.Registry) error {
	cfg, _, err := config.LoadFile(path, host)
	if err != nil {
		return err
	}
	return CheckTools(cfg, reg)
}

// ToolKeys returns cfg with the API keys of the tools set to tools.<name>.key =
// "proxy" turned into proxy credentials, and proxy.mitm on when there is one (the
// proxy sees an HTTPS request only when it decrypts it). cfg itself is not changed;
// th is the host the tools read their settings on (ToolHost).
//
// Each key (tools.Tool.Keys) set in the host environment goes where its tool sends
// it: to the host of the tool's base URL when the tool has one on the host (its
// variable, or a setting of its configuration file: tools.Key.BaseURL), else to the
// tool's API host; a key with neither is not held, with a warning. The variable
// inside the sandbox holds a placeholder, which the proxy refuses toward any other
// host. A key two tools send to different hosts (OPENAI_API_KEY: Codex to
// api.openai.com, qwen to its OPENAI_BASE_URL) is held for each, one credential per
// host sharing the placeholder; to the same host, once, for the first tool. A key
// already named by a [[proxy.credentials]] entry (value_env or placeholder_env) is
// left to that entry. A tool's configuration file the sandbox can write (in the
// project, or in a path of sandboxWritable) is not followed, with a warning. The
// tables CheckTools refuses fail.
func ToolKeys(cfg *config.Config, reg *tools.Registry, th tools.Host) (*config.Config, []HeldKey, []string, error) {
	if err := CheckTools(cfg, reg); err != nil {
		return nil, nil, nil, err
	}
	th = withWritable(cfg, reg, th)
	var held []HeldKey
	var warns []string
	named := map[string]bool{} // by the user's entries
	for _, c := range cfg.Proxy.Credentials {
		named[c.ValueEnv], named[c.PlaceholderEnv] = true, true
	}
	type envHost struct{ env, host string }
	heldFor := map[envHost]bool{}
	var creds []config.Credential
	for _, name := range slices.Sorted(maps.Keys(cfg.Tools)) {
		tc := cfg.Tools[name]
		t, _ := reg.Lookup(name) // CheckTools found it
		if tc.Key == nil || *tc.Key != config.KeyProxy {
			continue
		}
		set := 0
		ignored := false // the warning about the tool's IgnoredEnv, once per tool
		for _, k := range t.Keys {
			if _, ok := cfg.Host.Vars[k.Env]; !ok {
				continue
			}
			set++
			if named[k.Env] {
				continue
			}
			hosts, ws, err := keyHosts(k, th)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("%w: tools.%s.key: %w", ErrConfig, name, err)
			}
			for _, w := range ws {
				if !slices.Contains(warns, "tools."+name+".key: "+w) {
					warns = append(warns, "tools."+name+".key: "+w)
				}
			}
			if len(hosts) == 0 {
				continue
			}
			if k.IgnoredEnv != "" && cfg.Host.Vars[k.IgnoredEnv] != "" && !ignored {
				ignored = true
				warns = append(warns, fmt.Sprintf("tools.%s.key: %s is set on the host, but %s does not read it: its key is held for %s, where %s sends it", name, k.IgnoredEnv, name, andList(hosts), name))
			}
			for _, host := range hosts {
				if heldFor[envHost{k.Env, host}] {
					continue
				}
				heldFor[envHost{k.Env, host}] = true
				creds = append(creds, config.Credential{Host: host, Header: k.Header, Format: k.Format, ValueEnv: k.Env, PlaceholderEnv: k.Env})
				held = append(held, HeldKey{Tool: name, Env: k.Env, Host: host, Header: k.Header})
			}
		}
		if set == 0 {
			warns = append(warns, fmt.Sprintf("tools.%s.key = %q: none of %s is set in the host environment; no key is held for %s",
				name, config.KeyProxy, strings.Join(tools.KeyNames(t.Keys), ", "), name))
		}
	}
	if len(creds) == 0 {
		return cfg, nil, warns, nil
	}
	out := *cfg
	out.Proxy.Credentials = append(slices.Clone(cfg.Proxy.Credentials), creds...)
	out.Origins = maps.Clone(cfg.Origins)
	const origin = `tools.<name>.key = "proxy"`
	if o := cfg.Origins["proxy.credentials"]; o != "" {
		out.Origins["proxy.credentials"] = o + " and " + origin
	} else {
		out.Origins["proxy.credentials"] = origin
	}
	if !cfg.Proxy.MITM {
		out.Proxy.MITM = true
		out.Origins["proxy.mitm"] = origin
	}
	return &out, held, warns, nil
}

// UnheldKeys refuses cfg when a tool's API key set to be held by the proxy
// (tools.<name>.key = "proxy") is set on the host and would be held (ToolKeys finds
// a host for it), but no proxy credential names it: cfg did not come through
// ToolKeys (a caller that builds its configuration without Load or LoadDir), and the
// key would reach the sandbox as a plain secret. Build calls it: it fails closed.
func UnheldKeys(cfg *config.Config, reg *tools.Registry) error {
	named := map[string]bool{}
	for _, c := range cfg.Proxy.Credentials {
		named[c.ValueEnv], named[c.PlaceholderEnv] = true, true
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Tools)) {
		tc := cfg.Tools[name]
		t, ok := reg.Lookup(name)
		if !ok || tc.Key == nil || *tc.Key != config.KeyProxy {
			continue
		}
		for _, k := range t.Keys {
			if _, set := cfg.Host.Vars[k.Env]; !set || named[k.Env] {
				continue
			}
			if k.Host == "" && k.Endpoints == "" && cfg.Host.Vars[k.BaseURLEnv] == "" {
				continue // no host to hold it for: ToolKeys holds none either, and says so
			}
			return fmt.Errorf("%w: tools.%s.key = %q (%s): %s is set on the host but no proxy credential holds it, so it would enter the sandbox; pass the configuration through planner.ToolKeys before Build (planner.Load and LoadDir do), or set tools.%s.key = %q",
				ErrConfig, name, config.KeyProxy, toolOrigin(cfg, name), k.Env, name, "env")
		}
	}
	return nil
}

// keyHosts lists where the tool sends k on th, each host once: the host of every
// endpoint it may use (tools.Key.Routes), k.Host for one without a URL or when
// nothing moves the key (none, with a warning, when k.Host is "" too). What the
// tool's configuration files say that cannot be used is not followed: a file that
// cannot be read sends the key to k.Host alone, an optional endpoint (a provider, a
// profile) that is not a URL is left out; each with a warning. A plain http:// URL
// takes the key in clear, with a warning.
func keyHosts(k tools.Key, th tools.Host) (hosts, warns []string, err error) {
	eps, warns, rerr := k.Routes(th)
	if rerr != nil {
		// A file the tool cannot read either (Codex refuses to start on a config.toml
		// that does not parse) says nowhere else to send the key: the tool's own
		// default is the one host it would, and no run is stopped for it.
		if k.Host == "" {
			return nil, append(warns, fmt.Sprintf("%v; there is no other API host to hold %s for", rerr, k.Env)), nil
		}
		return []string{k.Host}, append(warns, fmt.Sprintf("%v; %s is held for %s", rerr, k.Env, k.Host)), nil
	}
	if len(eps) == 0 {
		eps = []tools.Endpoint{{}}
	}
	for _, e := range eps {
		host, w, err := endpointHost(k, e)
		switch {
		case err != nil && e.Optional:
			warns = append(warns, fmt.Sprintf("%v; %s is not held for it", err, k.Env))
		case err != nil:
			return nil, nil, err
		case host == "":
			warns = append(warns, fmt.Sprintf("%s is set but %s is not: there is no API host to hold it for", k.Env, k.BaseURLEnv))
		case !slices.Contains(hosts, host):
			hosts = append(hosts, host)
		}
		if w != "" && !slices.Contains(warns, w) {
			warns = append(warns, w)
		}
	}
	return hosts, warns, nil
}

// endpointHost is the proxy credential host of e, an endpoint of k: k.Host when e has
// no URL, else its URL's host and port ("http://" first for plain http, with a
// warning).
func endpointHost(k tools.Key, e tools.Endpoint) (host, warn string, err error) {
	if e.URL == "" {
		return k.Host, "", nil
	}
	u, err := url.Parse(e.URL)
	if err != nil || u.Hostname() == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", "", fmt.Errorf("%s is %q, not an http:// or https:// URL; the proxy cannot tell where %s goes", e.From, e.URL, k.Env)
	}
	entry := u.Hostname()
	if u.Port() != "" {
		entry = net.JoinHostPort(entry, u.Port())
	}
	if err := config.ValidEgressEntry(entry); err != nil {
		return "", "", fmt.Errorf("%s: %w", e.From, err)
	}
	if u.Scheme == "http" {
		return "http://" + entry, fmt.Sprintf("%s is plain http://: the proxy sends %s there unencrypted", e.From, k.Env), nil
	}
	return entry, "", nil
}

// KeyPlace says where one API key of an enabled tool goes.
type KeyPlace struct {
	// Tool is the first enabled tool that declares Env; when several tools have the
	// proxy hold Env for different hosts, it is each of them (", ", in the order
	// Detail names them), and Detail names each host's tools.
	Tool, Env string
	// Where is "outside" (held by the proxy: the tool's key switch or a
	// [[proxy.credentials]] entry), "inside" (an env secret of the sandbox) or "not
	// passed" (tools.<name>.secrets = false).
	Where  string
	Detail string // for people: where the proxy sends it, or how to keep it out
}

// KeyPlaces lists the API keys (tools.Tool.Keys) of the tools enabled on th that are
// set in the host environment, in registry order, and where each goes under cfg (as
// ToolKeys returned it).
func KeyPlaces(cfg *config.Config, reg *tools.Registry, th tools.Host) []KeyPlace {
	th = withWritable(cfg, reg, th)
	var out []KeyPlace
	seen := map[string]bool{}
	for _, t := range enabledTools(cfg, reg, th) {
		for _, k := range t.Keys {
			if _, ok := cfg.Host.Vars[k.Env]; !ok || seen[k.Env] {
				continue
			}
			seen[k.Env] = true
			kp := KeyPlace{Tool: t.Name, Env: k.Env, Where: "inside"}
			if toward, placeholder, holders := heldToward(cfg.Proxy.Credentials, k.Env, keyHolders(cfg, reg, th, k.Env)); toward != "" {
				if len(holders) > 1 {
					kp.Tool = strings.Join(holders, ", ")
				}
				kp.Where = "outside"
				kp.Detail = "held by the proxy, which sets " + toward
				if placeholder {
					kp.Detail += "; the sandbox's " + k.Env + " is a placeholder"
				}
			}
			if kp.Where == "inside" {
				kp.Detail = fmt.Sprintf("passed into the sandbox; tools.%s.key = %q keeps it outside", t.Name, config.KeyProxy)
				if tc, ok := cfg.Tools[t.Name]; ok && tc.Secrets != nil && !*tc.Secrets {
					kp.Where, kp.Detail = "not passed", fmt.Sprintf("tools.%s.secrets = false", t.Name)
				}
			}
			out = append(out, kp)
		}
	}
	return out
}

// toolHost is a tool that has the proxy hold one of its keys for host.
type toolHost struct{ tool, host string }

// keyHolders lists, in registry order, the tools that have the proxy hold env
// (tools.<name>.key = "proxy", as ToolKeys holds them) and the host each sends it to.
func keyHolders(cfg *config.Config, reg *tools.Registry, th tools.Host, env string) []toolHost {
	var out []toolHost
	for _, t := range reg.Tools() {
		if tc, ok := cfg.Tools[t.Name]; !ok || tc.Key == nil || *tc.Key != config.KeyProxy {
			continue
		}
		for _, k := range t.Keys {
			if k.Env != env {
				continue
			}
			if hosts, _, err := keyHosts(k, th); err == nil {
				for _, host := range hosts {
					out = append(out, toolHost{t.Name, host})
				}
			}
		}
	}
	return out
}

// heldToward says where the credentials with value_env env go, every host of each
// header ("Authorization toward api.openai.com and dashscope.aliyuncs.com"), and
// whether the first of them gives the sandbox a placeholder for env; "" when none
// holds env. When by (keyHolders) has tools holding env for two or more of those
// hosts, each such host names its tools ("api.openai.com (codex) and
// dashscope.aliyuncs.com (qwen)") and holders lists those tools in the order the
// text names them; otherwise holders is nil and the text is as above.
func heldToward(creds []config.Credential, env string, by []toolHost) (toward string, placeholder bool, holders []string) {
	var headers []string
	hosts := map[string][]string{}
	found := false
	for _, c := range creds {
		if c.ValueEnv != env {
			continue
		}
		if !found {
			found, placeholder = true, c.PlaceholderEnv == env
		}
		if _, ok := hosts[c.Header]; !ok {
			headers = append(headers, c.Header)
		}
		if !slices.Contains(hosts[c.Header], c.Host) {
			hosts[c.Header] = append(hosts[c.Header], c.Host)
		}
	}
	toolsOf := map[string][]string{} // a held host: the tools that send env there
	for _, th := range by {
		held := false
		for _, hs := range hosts {
			held = held || slices.Contains(hs, th.host)
		}
		if !held {
			continue
		}
		if !slices.Contains(toolsOf[th.host], th.tool) {
			toolsOf[th.host] = append(toolsOf[th.host], th.tool)
		}
	}
	for _, h := range headers { // the tools in the order the text names them
		for _, host := range hosts[h] {
			for _, tool := range toolsOf[host] {
				if !slices.Contains(holders, tool) {
					holders = append(holders, tool)
				}
			}
		}
	}
	if len(toolsOf) < 2 || len(holders) < 2 {
		holders = nil
	}
	parts := make([]string, len(headers))
	for i, h := range headers {
		named := hosts[h]
		if holders != nil {
			named = make([]string, len(hosts[h]))
			for j, host := range hosts[h] {
				named[j] = host
				if ts := toolsOf[host]; len(ts) > 0 {
					named[j] += " (" + strings.Join(ts, ", ") + ")"
				}
			}
		}
		parts[i] = h + " toward " + andList(named)
	}
	return strings.Join(parts, ", "), placeholder, holders
}

// andList joins words as people do: "a", "a and b", "a, b and c".
func andList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// toolOrigin is where the [tools.<name>] settings came from: the first of its keys set.
// keyedTools names the tools of reg that declare an API key the proxy can hold.
func keyedTools(reg *tools.Registry) []string {
	var names []string
	for _, t := range reg.Tools() {
		if len(t.Keys) > 0 {
			names = append(names, t.Name)
		}
	}
	slices.Sort(names)
	return names
}

// unknownTool is the error for a [tools.<name>] table reg has no tool for: the file
// and line of the table, the key, the tools there are and the fix.
func unknownTool(cfg *config.Config, reg *tools.Registry, name string) error {
	names := slices.Clone(reg.Names())
	slices.Sort(names)
	e := &config.Error{Key: "tools." + name, Err: fmt.Errorf("there is no tool %q; the tools are %s (`devsandbox tools list` describes them): correct the name, or remove the table", name, strings.Join(names, ", "))}
	if f, l, ok := cfg.Where(e.Key); ok {
		e.File, e.Line = f, l
	} else {
		e.File = toolOrigin(cfg, name)
	}
	return e
}

func toolOrigin(cfg *config.Config, name string) string {
	for _, k := range []string{"enabled", "secrets", "key"} {
		if o := cfg.Origins["tools."+name+"."+k]; o != "" {
			return o
		}
	}
	return "config"
}
