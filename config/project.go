package config

import (
	"slices"
	"strconv"
	"strings"
)

// A project file lives in the repository, so its author may not be the user. Once
// trusted it may tighten the sandbox and configure what stays inside it, but it may
// not widen what the sandbox reaches or turn a protection off:
//
//   - userOnly keys expose more of the host (paths, environment, secrets, sockets,
//     network destinations) or exempt files from masks; a project file may not set
//     them at all.
//   - stricter keys are protections with an order; a project file may set them only
//     to a value at least as strict as the one from the layers below it (the
//     defaults and the user file).
//   - every other key (images, resources, env.set, hide_paths, mask_files,
//     egress.deny, writable_dirs, ...) is free: it adds protection or concerns only
//     the inside of the sandbox.
//
// Breaking a rule is an *Error naming the project file, the line and the key, and
// matching ErrProjectRestricted and ErrInvalid. The --config file and flags are the
// user's own and have no such limits.

// userOnlyKey is a key only the user config (or --config, or a flag) may set.
type userOnlyKey struct {
	key  string
	flag string // a flag that sets it too, "" if none
	why  string // what setting it does
	set  func(*layer) bool
}

var userOnly = []userOnlyKey{
	{"sandbox.mask_allow", "", "it exempts files from masks", func(l *layer) bool { return len(l.Sandbox.MaskAllow) > 0 }},
	{"sandbox.mask_skip", "", "it exempts directories from masks", func(l *layer) bool { return len(l.Sandbox.MaskSkip) > 0 }},
	{"sandbox.ro_binds", "--mount", "it exposes host paths", func(l *layer) bool { return len(l.Sandbox.ROBinds) > 0 }},
	{"sandbox.rw_binds", "--mount", "it exposes host paths", func(l *layer) bool { return len(l.Sandbox.RWBinds) > 0 }},
	{"sandbox.host_mounts", "--mount", "it exposes host paths", func(l *layer) bool { return len(l.Sandbox.HostMounts) > 0 }},
	{"sandbox.system_binds", "", "it exposes host system paths", func(l *layer) bool { return len(l.Sandbox.SystemBinds) > 0 }},
	{"env.passthrough", "", "it passes host environment variables in", func(l *layer) bool { return len(l.Env.Passthrough) > 0 }},
	{"secrets.env", "-e NAME", "it passes host secrets in", func(l *layer) bool { return len(l.Secrets.Env) > 0 }},
	{"secrets.files", "--secret-file", "it passes host files in as secrets", func(l *layer) bool { return len(l.Secrets.Files) > 0 }},
	{"egress.allow", "--allow", "it opens network destinations", func(l *layer) bool { return len(l.Egress.Allow) > 0 }},
	{"proxy.credentials", "", "it sends host credentials to network destinations", func(l *layer) bool { return len(l.Proxy.Credentials) > 0 }},
	{"docker.host", "", "it chooses the engine that receives the sandbox's secrets", func(l *layer) bool { return l.Docker.Host != nil }},
	{"krun.podman_socket", "", "it chooses the engine that receives the sandbox's secrets", func(l *layer) bool { return l.Krun.PodmanSocket != nil }},
	{"krun.runtime", "", "it chooses the runtime that isolates the sandbox", func(l *layer) bool { return l.Krun.Runtime != nil }},
}

// stricterKey is a protection a project file may only tighten. Values are TOML
// literals ("\"enforce\"", "true").
type stricterKey struct {
	key     string
	flag    string
	proj    func(*layer) (string, bool) // the project file's value, if it sets one
	cur     func(*Config) string        // the value from the layers below
	atLeast func(v, cur string) bool    // v is at least as strict as cur
}

var stricter = []stricterKey{
	{"isolator", "--isolator", func(l *layer) (string, bool) { return lit(l.Isolator) }, func(c *Config) string { return quote(c.Isolator) },
		// Isolators keep the same guarantees, but the user's explicit choice stands:
		// a project may pick one only under "auto", or move to krun (a VM).
		func(v, cur string) bool { return v == cur || cur == `"auto"` || v == `"krun"` }},
	enumKey("sandbox.mode", "--mode", func(l *layer) *string { return l.Sandbox.Mode }, func(c *Config) string { return c.Sandbox.Mode },
		"off", "auto", "enforce"),
	enumKey("sandbox.environment", "", func(l *layer) *string { return l.Sandbox.Environment }, func(c *Config) string { return c.Sandbox.Environment },
		"dev", "prod"),
	boolKey("sandbox.read_only", "--read-only", func(l *layer) *bool { return l.Sandbox.ReadOnly }, func(c *Config) bool { return c.Sandbox.ReadOnly }, true),
	boolKey("sandbox.bind_host_cache", "", func(l *layer) *bool { return l.Sandbox.BindHostCache }, func(c *Config) bool { return c.Sandbox.BindHostCache }, false),
	boolKey("sandbox.docker_socket", "", func(l *layer) *bool { return l.Sandbox.DockerSocket }, func(c *Config) bool { return c.Sandbox.DockerSocket }, false),
	boolKey("sandbox.terminal_clipboard", "", func(l *layer) *bool { return l.Sandbox.TerminalClipboard }, func(c *Config) bool { return c.Sandbox.TerminalClipboard }, false),
	// Only a performance matter, but a project does not turn back on what the user
	// turned off.
	boolKey("sandbox.early_start", "", func(l *layer) *bool { return l.Sandbox.EarlyStart }, func(c *Config) bool { return c.Sandbox.EarlyStart }, false),
	boolKey("env.passthrough_all", "", func(l *layer) *bool { return l.Env.PassthroughAll }, func(c *Config) bool { return c.Env.PassthroughAll }, false),
	enumKey("egress.mode", "--egress", func(l *layer) *string { return l.Egress.Mode }, func(c *Config) string { return c.Egress.Mode },
		"open", "proxy", "allowlist", "none"),
	enumKey("proxy.default", "", func(l *layer) *string { return l.Proxy.Default }, func(c *Config) string { return c.Proxy.Default },
		"allow", "deny"),
	boolKey("proxy.mitm", "", func(l *layer) *bool { return l.Proxy.MITM }, func(c *Config) bool { return c.Proxy.MITM }, false),
	limitKey("sandbox.tmp_size", "", func(l *layer) (string, bool) { return lit(l.Sandbox.TmpSize) }, func(c *Config) string { return quote(c.Sandbox.TmpSize) }),
	reserveKey("sandbox.disk_reserve", func(l *layer) (string, bool) { return lit(l.Sandbox.DiskReserve) }, func(c *Config) string { return quote(c.Sandbox.DiskReserve) }),
	limitKey("limits.pids", "--pids", func(l *layer) (string, bool) { return intLit(l.Limits.Pids) }, func(c *Config) string { return strconv.Itoa(c.Limits.Pids) }),
	limitKey("limits.memory", "--memory", func(l *layer) (string, bool) { return lit(l.Limits.Memory) }, func(c *Config) string { return quote(c.Limits.Memory) }),
	limitKey("limits.cpus", "--cpus", func(l *layer) (string, bool) { return floatLit(l.Limits.CPUs) }, func(c *Config) string { return strconv.FormatFloat(c.Limits.CPUs, 'g', -1, 64) }),
	// The deprecated aliases set the same limits.
	limitKey("docker.memory", "--memory", func(l *layer) (string, bool) { return lit(l.Docker.Memory) }, func(c *Config) string { return quote(c.Limits.Memory) }),
	limitKey("docker.cpus", "--cpus", func(l *layer) (string, bool) { return floatLit(l.Docker.CPUs) }, func(c *Config) string { return strconv.FormatFloat(c.Limits.CPUs, 'g', -1, 64) }),
	boolKey("proxy.git_ssh", "", func(l *layer) *bool { return l.Proxy.GitSSH }, func(c *Config) bool { return c.Proxy.GitSSH }, false),
	// It binds a host socket into the container (DESIGN guarantee 11's exception).
	boolKey("docker.agent_bind", "", func(l *layer) *bool { return l.Docker.AgentBind }, func(c *Config) bool { return c.Docker.AgentBind }, false),
}

// limitKey is a stricterKey for a resource limit: a smaller value is stricter, and
// none (0, or no memory size) is the loosest.
func limitKey(key, flag string, proj func(*layer) (string, bool), cur func(*Config) string) stricterKey {
	amount := func(lit string) float64 {
		s := strings.Trim(lit, `"`)
		if n, ok := parseSize(s); ok && strings.HasPrefix(lit, `"`) {
			return float64(n)
		}
		f, _ := strconv.ParseFloat(s, 64)
		return f
	}
	return stricterKey{key: key, flag: flag, proj: proj, cur: cur,
		atLeast: func(v, cur string) bool {
			a, c := amount(v), amount(cur)
			return c == 0 || a > 0 && a <= c
		}}
}

// reserveKey is a stricterKey for a reserve of free space: a larger one is
// stricter, and none ("0") the loosest.
func reserveKey(key string, proj func(*layer) (string, bool), cur func(*Config) string) stricterKey {
	return stricterKey{key: key, proj: proj, cur: cur,
		atLeast: func(v, cur string) bool {
			a, _ := parseSize(strings.Trim(v, `"`))
			c, _ := parseSize(strings.Trim(cur, `"`))
			return a >= c
		}}
}

func intLit(p *int) (string, bool) {
	if p == nil {
		return "", false
	}
	return strconv.Itoa(*p), true
}

func floatLit(p *float64) (string, bool) {
	if p == nil {
		return "", false
	}
	return strconv.FormatFloat(*p, 'g', -1, 64), true
}

// enumKey is a stricterKey whose values run from the loosest to the strictest.
func enumKey(key, flag string, proj func(*layer) *string, cur func(*Config) string, loosestFirst ...string) stricterKey {
	return stricterKey{
		key: key, flag: flag,
		proj: func(l *layer) (string, bool) { return lit(proj(l)) },
		cur:  func(c *Config) string { return quote(cur(c)) },
		atLeast: func(v, cur string) bool {
			rank := func(s string) int {
				return slices.IndexFunc(loosestFirst, func(o string) bool { return quote(o) == s })
			}
			return rank(v) >= rank(cur)
		},
	}
}

// boolKey is a stricterKey whose strict value is strict.
func boolKey(key, flag string, proj func(*layer) *bool, cur func(*Config) bool, strict bool) stricterKey {
	return stricterKey{
		key: key, flag: flag,
		proj: func(l *layer) (string, bool) {
			if p := proj(l); p != nil {
				return strconv.FormatBool(*p), true
			}
			return "", false
		},
		cur:     func(c *Config) string { return strconv.FormatBool(cur(c)) },
		atLeast: func(v, cur string) bool { return v == cur || v == strconv.FormatBool(strict) },
	}
}

func lit(p *string) (string, bool) {
	if p == nil {
		return "", false
	}
	return quote(*p), true
}

// checkProject enforces the project-file rules on l, read from src, against c: the
// configuration of the layers below the project file.
func checkProject(c *Config, l *layer, src *source) error {
	if err := checkUserOnly(l, src, c.Host); err != nil {
		return err
	}
	for _, k := range stricter {
		v, ok := k.proj(l)
		if cur := k.cur(c); ok && !k.atLeast(v, cur) {
			return src.fail(k.key, -1, restrictedf("%s is looser than %s (%s); a project file may only make the sandbox stricter: %s",
				v, cur, originPhrase(c.Origins[k.key]), elsewhere(c.Host, k.flag)))
		}
	}
	// Turning MITM off is stricter, but the user's HTTPS credentials depend on it: say
	// so rather than send their requests without the credential.
	if l.Proxy.MITM != nil && !*l.Proxy.MITM && c.Proxy.MITM {
		for i, cr := range c.Proxy.Credentials {
			if coversHTTPS(cr.Host) {
				return src.fail("proxy.mitm", -1, invalidf("false here, but proxy.credentials[%d] (%s, from %s) covers HTTPS, which needs proxy.mitm = true; remove proxy.mitm from this file, or that credential from your user config",
					i, cr.Host, originPhrase(c.Origins["proxy.credentials"])))
			}
		}
	}
	// A push policy is stricter than none, but adding a pattern to the user's widens it.
	if len(c.Proxy.GitPush) > 0 {
		for i, pat := range l.Proxy.GitPush {
			if !slices.Contains(c.Proxy.GitPush, pat) {
				return src.fail("proxy.git_push", i, restrictedf("%q is not in the push policy %s (%s); a project file may add a push policy, not widen one: %s",
					pat, strings.Join(c.Proxy.GitPush, ", "), originPhrase(c.Origins["proxy.git_push"]), elsewhere(c.Host, "")))
			}
		}
	}
	for _, name := range sortedKeys(l.Tools) {
		t := l.Tools[name]
		cur := c.Tools[name]
		key := "tools." + name
		if t.Enabled != nil && *t.Enabled && (cur.Enabled == nil || !*cur.Enabled) {
			return src.fail(key+".enabled", -1, restrictedf("enabling a tool exposes its host files; a project file may only disable tools: %s",
				elsewhere(c.Host, "")))
		}
		if t.Secrets != nil && *t.Secrets && cur.Secrets != nil && !*cur.Secrets {
			return src.fail(key+".secrets", -1, restrictedf("true is looser than false (%s); a project file may only make the sandbox stricter: %s",
				originPhrase(c.Origins[key+".secrets"]), elsewhere(c.Host, "")))
		}
		// "proxy" keeps the key out of the sandbox; "env" would let it back in.
		if t.Key != nil && *t.Key != KeyProxy && cur.Key != nil && *cur.Key == KeyProxy {
			return src.fail(key+".key", -1, restrictedf("%q puts the key into the sandbox, which %q (%s) keeps out; a project file may only make the sandbox stricter: %s",
				*t.Key, KeyProxy, originPhrase(c.Origins[key+".key"]), elsewhere(c.Host, "")))
		}
	}
	return nil
}

// checkUserOnly refuses the keys a project file may not set, whatever the user
// config says.
func checkUserOnly(l *layer, src *source, host Host) error {
	for _, k := range userOnly {
		if k.set(l) {
			return src.fail(k.key, -1, restrictedf("a project file may not set this, since %s: %s", k.why, elsewhere(host, k.flag)))
		}
	}
	return nil
}

// elsewhere says where a user-only value goes instead.
func elsewhere(host Host, flag string) string {
	s := "set it in your user config (" + UserFile(host) + ")"
	if flag != "" {
		s += " or with " + flag
	}
	return s
}

func originPhrase(origin string) string {
	if origin == "" || origin == "default" {
		return "the default"
	}
	return "from " + origin
}
