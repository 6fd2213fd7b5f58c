package config

import (
	"math"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/internal/enginehost"
	"github.com/devsandbox/devsandbox/syscalls"
)

// check validates l, read from src, and normalises it in place: `~` is expanded
// against host.Home, paths are cleaned and host_mounts parsed. The first problem is
// returned as an *Error.
func (l *layer) check(src *source, host Host) error {
	for _, c := range []func(*source, Host) error{l.checkTop, l.checkSandbox, l.checkEnv, l.checkEgress, l.checkProxy, l.checkEngines, l.checkLimits} {
		if err := c(src, host); err != nil {
			return err
		}
	}
	return nil
}

func (l *layer) checkTop(src *source, _ Host) error {
	if err := oneOf(src, "isolator", l.Isolator, "auto", "bwrap", "docker", "krun"); err != nil {
		return err
	}
	for _, name := range sortedKeys(l.Tools) {
		if err := oneOf(src, "tools."+name+".key", l.Tools[name].Key, "env", KeyProxy); err != nil {
			return err
		}
	}
	return nil
}

func (l *layer) checkSandbox(src *source, host Host) error {
	s := &l.Sandbox
	if err := oneOf(src, "sandbox.mode", s.Mode, "enforce", "auto", "off"); err != nil {
		return err
	}
	if err := oneOf(src, "sandbox.environment", s.Environment, "dev", "prod"); err != nil {
		return err
	}
	if err := oneOf(src, "sandbox.tmp", s.Tmp, "session", "tmpfs", "shm"); err != nil {
		return err
	}
	if s.DiskReserve != nil {
		if _, ok := parseSize(*s.DiskReserve); !ok {
			return src.fail("sandbox.disk_reserve", -1, invalidf("%q is not a size such as \"1g\" or \"500m\" (\"0\" for no reserve)", *s.DiskReserve))
		}
	}
	if s.TmpSize != nil {
		if err := checkTmpSize(*s.TmpSize); err != nil {
			return src.fail("sandbox.tmp_size", -1, err)
		}
	}
	paths := func(p string) (string, error) { return absPath(p, host.Home) }
	lists := []struct {
		key   string
		list  []string
		check func(string) (string, error)
	}{
		{"sandbox.writable_dirs", s.WritableDirs, projectRelative},
		{"sandbox.hide_paths", s.HidePaths, paths},
		{"sandbox.mask_files", s.MaskFiles, baseGlob},
		{"sandbox.mask_allow", s.MaskAllow, baseGlob},
		{"sandbox.mask_skip", s.MaskSkip, dirName},
		{"sandbox.ro_binds", s.ROBinds, paths},
		{"sandbox.rw_binds", s.RWBinds, paths},
		{"sandbox.relax_syscalls", s.RelaxSyscalls, func(g string) (string, error) {
			if _, err := syscalls.ParseGroup(g); err != nil {
				return "", invalidf("%q is not a syscall group (one of %s)", g, strings.Join(syscalls.GroupNames(), ", "))
			}
			return g, nil
		}},
		{"sandbox.system_binds", s.SystemBinds, func(p string) (string, error) {
			if p == "host" {
				if len(s.SystemBinds) != 1 {
					return "", invalidf(`"host" (all of / read-only) must be the only entry`)
				}
				return p, nil
			}
			return absPath(p, host.Home)
		}},
	}
	for _, ls := range lists {
		if err := eachEntry(src, ls.key, ls.list, ls.check); err != nil {
			return err
		}
	}
	for i, m := range s.HostMounts {
		mount, err := parseMount(m, host.Home, false)
		if err != nil {
			return src.fail("sandbox.host_mounts", i, err)
		}
		s.mounts = append(s.mounts, mount)
	}
	return nil
}

func (l *layer) checkEnv(src *source, host Host) error {
	if err := eachEntry(src, "env.passthrough", l.Env.Passthrough, passthroughName); err != nil {
		return err
	}
	if err := eachEntry(src, "secrets.env", l.Secrets.Env, envName); err != nil {
		return err
	}
	for name := range l.Env.Set {
		if _, err := envName(name); err != nil {
			return src.fail("env.set."+name, -1, err)
		}
	}
	for name, p := range l.Secrets.Files {
		if _, err := envName(name); err != nil {
			return src.fail("secrets.files."+name, -1, err)
		}
		abs, err := absPath(p, host.Home)
		if err != nil {
			return src.fail("secrets.files."+name, -1, err)
		}
		l.Secrets.Files[name] = abs
	}
	return nil
}

func (l *layer) checkEgress(src *source, _ Host) error {
	if m := l.Egress.Mode; m != nil {
		switch *m {
		case "open", "none", "proxy", "allowlist":
		default:
			return src.fail("egress.mode", -1, invalidf("%q is not one of open, none, proxy, allowlist", *m))
		}
	}
	if err := oneOf(src, "egress.loopback_entries", l.Egress.LoopbackEntries, "error", "ignore"); err != nil {
		return err
	}
	egress := func(s string) (string, error) { return s, ValidEgressEntry(s) }
	if err := eachEntry(src, "egress.allow", l.Egress.Allow, egress); err != nil {
		return err
	}
	if err := eachEntry(src, "egress.deny", l.Egress.Deny, egress); err != nil {
		return err
	}
	return eachEntry(src, "egress.publish", l.Egress.Publish, func(s string) (string, error) { return s, ValidPublish(s) })
}

func (l *layer) checkProxy(src *source, host Host) error {
	if err := oneOf(src, "proxy.default", l.Proxy.Default, "allow", "deny"); err != nil {
		return err
	}
	if err := eachEntry(src, "proxy.git_push", l.Proxy.GitPush, func(s string) (string, error) {
		if _, err := egress.ParseRefPattern(s); err != nil {
			return "", invalidf("%v", err)
		}
		return s, nil
	}); err != nil {
		return err
	}
	for i := range l.Proxy.Credentials {
		c := &l.Proxy.Credentials[i]
		key := "proxy.credentials[" + strconv.Itoa(i) + "]"
		fail := func(field string, err error) error { return src.fail(key+"."+field, -1, err) }
		switch {
		case c.Host == "":
			return fail("host", invalidf("missing: each credential needs a host and a header"))
		case c.Header == "":
			return fail("header", invalidf("missing: each credential needs a host and a header"))
		case (c.ValueEnv == "") == (c.ValueFile == ""):
			return fail("value_env", invalidf("set exactly one of value_env and value_file"))
		}
		if err := ValidEgressEntry(credentialEntry(c.Host)); err != nil {
			return fail("host", err)
		}
		if !httpToken(c.Header) {
			return fail("header", invalidf("%q is not an HTTP header name", c.Header))
		}
		if c.ValueEnv != "" {
			if _, err := envName(c.ValueEnv); err != nil {
				return fail("value_env", err)
			}
		}
		if c.ValueFile != "" {
			abs, err := absPath(c.ValueFile, host.Home)
			if err != nil {
				return fail("value_file", err)
			}
			c.ValueFile = abs
		}
		if c.Format != "" && !strings.Contains(c.Format, "{}") {
			return fail("format", invalidf("%q has no {} where the value goes", c.Format))
		}
		if c.PlaceholderEnv != "" {
			if _, err := envName(c.PlaceholderEnv); err != nil {
				return fail("placeholder_env", err)
			}
		}
	}
	return checkCredentialClashes(src, l.Proxy.Credentials)
}

// checkCredentialClashes refuses two credentials that contradict each other: one
// placeholder_env for two secrets (a placeholder stands for one value), a variable
// that is one entry's placeholder_env and another's value_env (the sandbox would hold
// a placeholder in the variable the proxy withholds as a secret), and one host and
// header twice (the proxy would send one of the two, or the same twice). One key
// sent to several hosts is several entries with the same value_env and
// placeholder_env and different hosts, which is not a clash.
func checkCredentialClashes(src *source, creds []layerCredential) error {
	for i := range creds {
		c := &creds[i]
		key := "proxy.credentials[" + strconv.Itoa(i) + "]"
		fail := func(field, format string, a ...any) error { return src.fail(key+"."+field, -1, invalidf(format, a...)) }
		for j := range i {
			d := &creds[j]
			other := "proxy.credentials[" + strconv.Itoa(j) + "]"
			sameValue := c.ValueEnv == d.ValueEnv && c.ValueFile == d.ValueFile
			switch {
			case c.PlaceholderEnv != "" && c.PlaceholderEnv == d.PlaceholderEnv && !sameValue:
				return fail("placeholder_env", "%s is also the placeholder_env of %s, which holds another value: a placeholder stands for one secret; give this entry a placeholder_env of its own (entries for one key sent to several hosts share both value_env and placeholder_env)", c.PlaceholderEnv, other)
			case c.PlaceholderEnv != "" && c.PlaceholderEnv != c.ValueEnv && c.PlaceholderEnv == d.ValueEnv:
				return fail("placeholder_env", "%s is the value_env of %s: the sandbox would get a placeholder in the variable the proxy withholds as a secret; choose another placeholder_env", c.PlaceholderEnv, other)
			case d.PlaceholderEnv != "" && d.PlaceholderEnv != d.ValueEnv && c.ValueEnv == d.PlaceholderEnv:
				return fail("value_env", "%s is the placeholder_env of %s: the sandbox would get a placeholder in the variable the proxy withholds as a secret; choose another placeholder_env there", c.ValueEnv, other)
			case c.Host == d.Host && strings.EqualFold(c.Header, d.Header) && sameValue && c.Format == d.Format:
				return fail("host", "%s repeats %s (the same host, header and value); remove one", key, other)
			case c.Host == d.Host && strings.EqualFold(c.Header, d.Header):
				return fail("header", "%s sets %s toward %s too, with another value: the proxy would send only one of them; remove one, or give each its own host", other, c.Header, c.Host)
			}
		}
	}
	return nil
}

// checkCredentialsMITM refuses a credential of l that goes over HTTPS while MITM is off
// (mitm: its value once l is applied). The proxy sees an HTTPS request, to add a
// credential to it, only when it decrypts the traffic. Credentials come from the user
// file or --config alone, and the only other layers that may set proxy.mitm are the
// defaults (false) and a project file, which may only turn it off (see checkProject);
// so in effect the credential and proxy.mitm = true must be in the same file.
func (l *layer) checkCredentialsMITM(src *source, mitm bool) error {
	if mitm {
		return nil
	}
	for i, c := range l.Proxy.Credentials {
		if coversHTTPS(c.Host) {
			return src.fail("proxy.credentials["+strconv.Itoa(i)+"].host", -1, invalidf(
				"%q goes over HTTPS, where the proxy can add a credential only when it decrypts the traffic: set proxy.mitm = true; or, for a service that speaks plain HTTP, write http://%s (the credential then crosses the network unencrypted)",
				c.Host, credentialEntry(c.Host)))
		}
	}
	return nil
}

// checkGitPush refuses a push policy the proxy could not enforce, once l is merged
// into c: every push must pass through the proxy, which reads HTTPS only when it
// decrypts it. So proxy.git_push needs proxy.mitm = true and egress.mode "proxy" (or
// "none", where nothing is pushed): in "open" the sandbox reaches servers directly,
// and in "allowlist" the allowed destinations are reachable past the proxy. The error
// names l's own key: proxy.git_push when l sets it, else the key of l that broke it.
func (l *layer) checkGitPush(src *source, c *Config) error {
	if len(c.Proxy.GitPush) == 0 {
		return nil
	}
	key := "proxy.git_push"
	switch {
	case !c.Proxy.MITM:
		if len(l.Proxy.GitPush) == 0 {
			if l.Proxy.MITM == nil {
				return nil
			}
			key = "proxy.mitm"
		}
		return src.fail(key, -1, invalidf(
			"proxy.git_push (%s) needs proxy.mitm = true: a push over HTTPS travels inside TLS, which the proxy reads only when it decrypts it, so it would pass unchecked; set proxy.mitm = true in your user config",
			originPhrase(c.Origins["proxy.git_push"])))
	case c.Egress.Mode == "open" || c.Egress.Mode == "allowlist":
		if len(l.Proxy.GitPush) == 0 {
			if l.Egress.Mode == nil {
				return nil
			}
			key = "egress.mode"
		}
		return src.fail(key, -1, invalidf(
			"proxy.git_push (%s) needs every push to pass through the proxy, but egress.mode is %q (%s), where the sandbox reaches servers past it: use egress.mode = \"proxy\" (with proxy.default = \"deny\" and egress.allow for an allowlist the proxy enforces)",
			originPhrase(c.Origins["proxy.git_push"]), c.Egress.Mode, originPhrase(c.Origins["egress.mode"])))
	}
	return nil
}

// credentialEntry is a proxy.credentials host without its scheme: the egress entry.
func credentialEntry(host string) string {
	if rest, ok := strings.CutPrefix(host, "https://"); ok {
		return rest
	}
	if rest, ok := strings.CutPrefix(host, "http://"); ok {
		return rest
	}
	return host
}

// coversHTTPS reports whether a valid proxy.credentials host goes over HTTPS: unless it
// is written http://, or names port 80 without a scheme, it does (the proxy adds it only
// over TLS it speaks itself, to port 443 or the port named).
func coversHTTPS(host string) bool {
	if strings.HasPrefix(host, "http://") {
		return false
	}
	if strings.HasPrefix(host, "https://") {
		return true
	}
	var port string
	switch {
	case strings.HasPrefix(host, "["):
		_, port, _ = strings.Cut(host, "]")
		port = strings.TrimPrefix(port, ":")
	case strings.Count(host, ":") == 1:
		_, port, _ = strings.Cut(host, ":")
	}
	return port != "80"
}

func (l *layer) checkEngines(src *source, host Host) error {
	d, k := &l.Docker, &l.Krun
	for _, s := range []struct {
		key string
		v   *string
	}{{"docker.image", d.Image}, {"krun.image", k.Image}, {"krun.runtime", k.Runtime}} {
		if s.v != nil && *s.v == "" {
			return src.fail(s.key, -1, invalidf("must not be empty"))
		}
	}
	if d.Host != nil && *d.Host != "" {
		if err := engineHost(*d.Host); err != nil {
			return src.fail("docker.host", -1, err)
		}
	}
	if d.Home != nil {
		if err := containerHome(*d.Home, host.Home); err != nil {
			return src.fail("docker.home", -1, err)
		}
	}
	if d.CPUs != nil && (!(*d.CPUs > 0) || math.IsInf(*d.CPUs, 1)) {
		return src.fail("docker.cpus", -1, invalidf("%v is not greater than 0", *d.CPUs))
	}
	if d.Memory != nil {
		if err := checkMemory(*d.Memory); err != nil {
			return src.fail("docker.memory", -1, err)
		}
	}
	if k.CPUs != nil && *k.CPUs <= 0 {
		return src.fail("krun.cpus", -1, invalidf("%d is not greater than 0", *k.CPUs))
	}
	if k.MemoryMiB != nil && *k.MemoryMiB <= 0 {
		return src.fail("krun.memory_mib", -1, invalidf("%d is not greater than 0", *k.MemoryMiB))
	}
	if p := k.PodmanSocket; p != nil && *p != "" {
		abs, err := absPath(*p, host.Home)
		if err != nil {
			return src.fail("krun.podman_socket", -1, err)
		}
		*p = abs
	}
	return nil
}

// containerHome checks a docker.home: an absolute path that is the host home's or lies
// apart from it. A path below the host home is at one place in a container whose home
// is the host home's path and at two, kept apart, in one whose home lies elsewhere;
// a home strictly above or below the host home would put those two places inside one
// another, where the planner cannot give both the same view (a mask at one would be
// shown, or covered, through the other).
func containerHome(h, hostHome string) error {
	if !path.IsAbs(h) {
		return invalidf("%q is not an absolute path", h)
	}
	c := path.Clean(h)
	within := func(a, b string) bool { return b == "/" || a == b || strings.HasPrefix(a, b+"/") }
	var where string
	switch {
	case c == hostHome:
		return nil
	case within(hostHome, c):
		where = "contains"
	case within(c, hostHome):
		where = "lies inside"
	default:
		return nil
	}
	return invalidf("%q %s your home (%s): set it to %s, or to a path neither above nor below it", h, where, hostHome, hostHome)
}

// engineHost checks a docker.host address (see enginehost.Check).
func engineHost(h string) error {
	if err := enginehost.Check(h, enginehost.ConfigKey); err != nil {
		return invalidf("%v", err)
	}
	return nil
}

// checkEngineEnv judges the engine address the environment gives c's docker isolator
// (DOCKER_HOST, else the current docker CLI context: DOCKER_CONTEXT or the docker
// CLI's config.json) as docker.host is judged, where that isolator would dial it: the
// docker isolator is chosen and docker.host leaves the address to the environment.
// An ssh:// address is refused here with the words a launch uses, so `config
// validate`, `doctor` and a run agree. Under auto it is judged at launch, where auto
// reaches docker (a DOCKER_HOST or context for the docker CLI alone must not stop
// bwrap runs).
func checkEngineEnv(c *Config) error {
	if c.Isolator != "docker" || c.Docker.Host != "" {
		return nil
	}
	if h := c.Host.Vars["DOCKER_HOST"]; h != "" {
		if err := enginehost.Check(h, enginehost.EnvVar); err != nil {
			return &Error{Source: "env DOCKER_HOST", Key: "docker.host", Err: invalidf("%v", err)}
		}
		return nil
	}
	if name, dir := enginehost.Context(c.Host.Vars, c.Host.Home); name != "" {
		if _, err := enginehost.ContextHost(dir, name); err != nil {
			return &Error{Source: "docker context " + strconv.Quote(name), Key: "docker.host", Err: invalidf("%v", err)}
		}
	}
	return nil
}

// Bounds of [limits]: the sandbox's own init and helpers need a few tasks, and the
// engines refuse less than 6 MiB of memory.
const (
	minPids        = 8
	minMemoryBytes = 6 << 20
)

func (l *layer) checkLimits(src *source, _ Host) error {
	lm := &l.Limits
	if lm.Pids != nil && *lm.Pids != 0 && (*lm.Pids < minPids || *lm.Pids > 1<<22) {
		return src.fail("limits.pids", -1, invalidf("%d is not a number of tasks from %d to %d (or 0 for no limit)", *lm.Pids, minPids, 1<<22))
	}
	if lm.Memory != nil {
		if err := checkMemory(*lm.Memory); err != nil {
			return src.fail("limits.memory", -1, err)
		}
	}
	if lm.CPUs != nil && (!(*lm.CPUs > 0) || math.IsInf(*lm.CPUs, 1)) {
		return src.fail("limits.cpus", -1, invalidf("%v is not greater than 0", *lm.CPUs))
	}
	return nil
}

// DefaultDiskReserve is sandbox.disk_reserve's default.
const DefaultDiskReserve = "1g"

// minTmpSize is the smallest sandbox.tmp_size: less is a typo more often than a wish.
const minTmpSize = 1 << 20

// checkTmpSize checks sandbox.tmp_size: a size of at least 1m ("" is no size).
func checkTmpSize(s string) error {
	if s == "" {
		return nil
	}
	n, ok := parseSize(s)
	if !ok {
		return invalidf("%q is not a size such as \"512m\" or \"4g\"", s)
	}
	if n < minTmpSize {
		return invalidf("%q is less than 1m", s)
	}
	return nil
}

func checkMemory(s string) error {
	n, ok := parseSize(s)
	if !ok {
		return invalidf("%q is not a size such as \"512m\" or \"4g\"", s)
	}
	if n < minMemoryBytes {
		return invalidf("%q is less than the 6m a sandbox needs", s)
	}
	return nil
}

// oneOf checks an enum value.
func oneOf(src *source, key string, v *string, allowed ...string) error {
	if v == nil {
		return nil
	}
	for _, a := range allowed {
		if *v == a {
			return nil
		}
	}
	return src.fail(key, -1, invalidf("%q is not one of %s", *v, strings.Join(allowed, ", ")))
}

// eachEntry checks and normalises every entry of list in place.
func eachEntry(src *source, key string, list []string, check func(string) (string, error)) error {
	for i, s := range list {
		v, err := check(s)
		if err != nil {
			return src.fail(key, i, err)
		}
		list[i] = v
	}
	return nil
}

// expandHome expands a leading "~" or "~/" to home.
func expandHome(p, home string) string {
	if p == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return p
}

// absPath expands `~` and requires an absolute path, which it returns cleaned.
func absPath(p, home string) (string, error) {
	e := expandHome(p, home)
	if !filepath.IsAbs(e) {
		return "", invalidf("%q is not an absolute path (it may start with ~/)", p)
	}
	return filepath.Clean(e), nil
}

func projectRelative(p string) (string, error) {
	c := filepath.Clean(p)
	switch {
	case p == "" || filepath.IsAbs(p) || strings.HasPrefix(p, "~"):
		return "", invalidf("%q is not a path relative to the project", p)
	case c == ".." || strings.HasPrefix(c, "../"):
		return "", invalidf("%q leaves the project", p)
	}
	return c, nil
}

// baseGlob checks a glob matched against base names.
func baseGlob(g string) (string, error) {
	if g == "" || strings.Contains(g, "/") {
		return "", invalidf("%q is not a file name pattern (it is matched against base names, so it has no '/')", g)
	}
	if _, err := path.Match(g, ""); err != nil {
		return "", invalidf("%q is not a valid pattern: %v", g, err)
	}
	return g, nil
}

func dirName(n string) (string, error) {
	if n == "" || n == "." || n == ".." || strings.Contains(n, "/") {
		return "", invalidf("%q is not a directory name", n)
	}
	return n, nil
}

// envName checks an environment variable name: [A-Za-z_][A-Za-z0-9_]*.
func envName(n string) (string, error) {
	if !validEnvName(n) {
		return "", invalidf("%q is not a valid environment variable name (letters, digits and _, not starting with a digit)", n)
	}
	return n, nil
}

func validEnvName(n string) bool {
	if n == "" || n[0] >= '0' && n[0] <= '9' {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// passthroughName accepts a variable name or a prefix pattern such as "LC_*".
func passthroughName(n string) (string, error) {
	if n == "*" {
		return "", invalidf(`a bare "*" would pass the whole host environment; set env.passthrough_all = true if that is what you want`)
	}
	if validEnvName(strings.TrimSuffix(n, "*")) {
		return n, nil
	}
	return "", invalidf("%q is not an environment variable name or a prefix pattern such as \"LC_*\"", n)
}

// parseMount parses "SRC:DST[:ro|:rw]"; when flag is set (--mount), DST is optional
// and defaults to SRC.
func parseMount(s, home string, flag bool) (Mount, error) {
	parts := strings.Split(s, ":")
	ro := false
	if n := len(parts); n > 1 && (n == 3 || flag) && (parts[n-1] == "ro" || parts[n-1] == "rw") {
		ro = parts[n-1] == "ro"
		parts = parts[:n-1]
	}
	want := `SRC:DST[:ro]`
	if flag {
		want = `SRC[:DST][:ro]`
	}
	if len(parts) == 1 && flag {
		parts = append(parts, parts[0])
	}
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return Mount{}, invalidf("%q is not of the form %s", s, want)
	}
	src, err := absPath(parts[0], home)
	if err != nil {
		return Mount{}, err
	}
	dst, err := absPath(parts[1], home)
	if err != nil {
		return Mount{}, err
	}
	return Mount{Source: src, Dest: dst, ReadOnly: ro}, nil
}

// parseSize reads a size such as "512m", "4g" or "1.5G": digits, an optional
// fraction and an optional unit b, k, m or g (powers of 1024, as the docker CLI
// reads them), in bytes.
func parseSize(s string) (int64, bool) {
	mult := 1.0
	if s != "" {
		switch s[len(s)-1] {
		case 'b', 'B':
			s = s[:len(s)-1]
		case 'k', 'K':
			mult, s = 1<<10, s[:len(s)-1]
		case 'm', 'M':
			mult, s = 1<<20, s[:len(s)-1]
		case 'g', 'G':
			mult, s = 1<<30, s[:len(s)-1]
		}
	}
	whole, frac, dot := strings.Cut(s, ".")
	if !digits(whole) || dot && !digits(frac) {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v*mult > 1<<62 {
		return 0, false
	}
	return int64(v * mult), true
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// httpToken reports whether s is an HTTP header field name (RFC 9110 token).
func httpToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
