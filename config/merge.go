package config

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Version is the devsandbox release, set at build time; the default images are
// tagged with it.
var Version = "dev"

// defaultImage is the image docker.image (and through it krun.image) defaults to.
func defaultImage() string { return "devsandbox/default:" + Version }

// DefaultPids is limits.pids unless a layer sets it: a fork storm stops there.
const DefaultPids = 4096

// defaults returns the built-in layer: every key with a default is set and has the
// origin "default". krun.image is settled by finish, once docker.image is known.
func defaults(host Host) *Config {
	h := host.Home
	c := &Config{
		Isolator: "auto",
		Sandbox: Sandbox{
			Mode:        "enforce",
			Environment: "dev",
			HidePaths: []string{
				filepath.Join(h, ".ssh"), filepath.Join(h, ".aws"), filepath.Join(h, ".gnupg"),
				filepath.Join(h, ".config/gcloud"), filepath.Join(h, ".azure"), filepath.Join(h, ".kube"),
				filepath.Join(h, ".docker"), filepath.Join(h, ".netrc"),
			},
			MaskFiles: []string{".env", ".env.*"},
			MaskSkip:  []string{".git", "node_modules"},
			Tmp:       "session",
			// A runaway command stops before the host's disk is full: the
			// user's editor, git and other programs keep room to write.
			DiskReserve: DefaultDiskReserve,
			EarlyStart:  true,
		},
		Env:     Env{Set: map[string]string{}},
		Secrets: Secrets{Files: map[string]string{}},
		Tools:   map[string]ToolConfig{},
		Egress:  Egress{Mode: "proxy", LoopbackEntries: "error"},
		Proxy:   Proxy{Default: "allow"},
		Docker:  Docker{Image: defaultImage(), Home: defaultContainerHome(host)},
		Krun:    Krun{Runtime: "krun", CPUs: 2, MemoryMiB: 2048},
		Limits:  Limits{Pids: DefaultPids},
		Host:    host,
		Origins: map[string]string{},
	}
	for _, k := range []string{
		"isolator", "sandbox.mode", "sandbox.environment", "sandbox.read_only", "sandbox.hide_paths",
		"sandbox.mask_files", "sandbox.mask_skip", "sandbox.tmp", "sandbox.disk_reserve", "sandbox.bind_host_cache",
		"sandbox.docker_socket", "sandbox.terminal_clipboard", "sandbox.early_start", "env.passthrough_all", "egress.mode", "egress.loopback_entries", "proxy.default", "proxy.mitm", "proxy.git_ssh",
		"docker.image", "docker.home", "docker.keep_container", "docker.agent_bind", "krun.runtime", "krun.cpus", "krun.memory_mib",
		"limits.pids",
	} {
		c.Origins[k] = "default"
	}
	return c
}

// Defaults returns the built-in configuration alone, over host: what devsandbox runs
// with when no file applies. `doctor` judges the host by it when neither the
// project's nor the user's configuration loads, so the engine address still comes
// from host's environment (DOCKER_HOST, the docker context).
func Defaults(host Host) *Config {
	c := defaults(host)
	finish(c)
	return c
}

// merger applies one checked layer onto a Config, recording its origin.
type merger struct {
	c      *Config
	origin string
}

func set[T any](m merger, key string, dst *T, v *T) {
	if v != nil {
		*dst = *v
		m.c.Origins[key] = m.origin
	}
}

// union appends the entries of add missing from *dst, in order.
func union[T comparable](m merger, key string, dst *[]T, add []T) {
	if len(add) == 0 {
		return
	}
	for _, v := range add {
		if !slices.Contains(*dst, v) {
			*dst = append(*dst, v)
		}
	}
	m.c.Origins[key] = m.origin
}

// unionMounts is union for sandbox.host_mounts, by mount (Origin aside): each entry
// added keeps where it came from (Mount.Origin), the entry's own line in a file.
func unionMounts(m merger, src *source, dst *[]Mount, add []Mount) {
	if len(add) == 0 {
		return
	}
	for i, v := range add {
		if slices.ContainsFunc(*dst, func(d Mount) bool { return d.Source == v.Source && d.Dest == v.Dest && d.ReadOnly == v.ReadOnly }) {
			continue
		}
		v.Origin = m.origin
		if src.file != "" {
			if line := src.exactLine("sandbox.host_mounts[" + strconv.Itoa(i) + "]"); line > 0 {
				v.Origin += ":" + strconv.Itoa(line)
			}
		}
		*dst = append(*dst, v)
	}
	m.c.Origins["sandbox.host_mounts"] = m.origin
}

// entries records where the entries add of the list key came from, for EntryOrigin:
// an entry a lower layer gave already keeps its origin (union keeps it there).
func (m merger) entries(src *source, key string, merged, add []string) {
	for i, v := range add {
		k := entryKey(key, v)
		if _, ok := m.c.entries[k]; ok || !slices.Contains(merged, v) {
			continue
		}
		m.c.setEntry(k, m.origin, src.exactLine(key+"["+strconv.Itoa(i)+"]"))
	}
}

func entryKey(key, value string) string { return key + "\x00" + value }

func (c *Config) setEntry(k, origin string, line int) {
	if c.entries == nil {
		c.entries = map[string]string{}
	}
	if line > 0 {
		origin += ":" + strconv.Itoa(line)
	}
	c.entries[k] = origin
}

// EntryOrigin says where an entry was given, for errors about it: the entry value of
// the list key ("sandbox.ro_binds", "sandbox.rw_binds", "sandbox.writable_dirs",
// "sandbox.system_binds"; "proxy.credentials" with the
// entry's index in the merged list), or with value "" the table entry key
// ("secrets.files.NAME"). It is "FILE:LINE" (the entry's own line; "FILE"
// when it cannot be found), the flag ("flag --secret-file"), or "" when unknown.
func (c *Config) EntryOrigin(key, value string) string {
	return c.entries[entryKey(key, value)]
}

// location is a place in a config file (line 0: unknown).
type location struct {
	file string
	line int
}

// Where returns the file and line where key was given, for the keys a check outside
// this package refuses with the file's location: "tools.<name>" (the table of the
// last file that gave it). ok is false when no file gave key (line 0: its line is
// unknown).
func (c *Config) Where(key string) (file string, line int, ok bool) {
	l, ok := c.at[key]
	return l.file, l.line, ok
}

// merge applies l, checked against src, onto c.
func merge(c *Config, l *layer, src *source) error {
	m := merger{c: c, origin: src.name}
	set(m, "isolator", &c.Isolator, l.Isolator)

	s, ls := &c.Sandbox, &l.Sandbox
	set(m, "sandbox.mode", &s.Mode, ls.Mode)
	set(m, "sandbox.environment", &s.Environment, ls.Environment)
	set(m, "sandbox.read_only", &s.ReadOnly, ls.ReadOnly)
	union(m, "sandbox.writable_dirs", &s.WritableDirs, ls.WritableDirs)
	m.entries(src, "sandbox.writable_dirs", s.WritableDirs, ls.WritableDirs)
	union(m, "sandbox.hide_paths", &s.HidePaths, ls.HidePaths)
	union(m, "sandbox.mask_files", &s.MaskFiles, ls.MaskFiles)
	union(m, "sandbox.mask_allow", &s.MaskAllow, ls.MaskAllow)
	union(m, "sandbox.mask_skip", &s.MaskSkip, ls.MaskSkip)
	union(m, "sandbox.ro_binds", &s.ROBinds, ls.ROBinds)
	m.entries(src, "sandbox.ro_binds", s.ROBinds, ls.ROBinds)
	union(m, "sandbox.rw_binds", &s.RWBinds, ls.RWBinds)
	m.entries(src, "sandbox.rw_binds", s.RWBinds, ls.RWBinds)
	unionMounts(m, src, &s.HostMounts, ls.mounts)
	union(m, "sandbox.system_binds", &s.SystemBinds, ls.SystemBinds)
	m.entries(src, "sandbox.system_binds", s.SystemBinds, ls.SystemBinds)
	if len(s.SystemBinds) > 1 && slices.Contains(s.SystemBinds, "host") {
		return src.fail("sandbox.system_binds", -1,
			invalidf(`"host" (all of / read-only) must be the only entry, but the layers together give %q`, s.SystemBinds))
	}
	set(m, "sandbox.tmp", &s.Tmp, ls.Tmp)
	set(m, "sandbox.tmp_size", &s.TmpSize, ls.TmpSize)
	set(m, "sandbox.disk_reserve", &s.DiskReserve, ls.DiskReserve)
	set(m, "sandbox.bind_host_cache", &s.BindHostCache, ls.BindHostCache)
	set(m, "sandbox.docker_socket", &s.DockerSocket, ls.DockerSocket)
	set(m, "sandbox.terminal_clipboard", &s.TerminalClipboard, ls.TerminalClipboard)
	union(m, "sandbox.relax_syscalls", &s.RelaxSyscalls, ls.RelaxSyscalls)
	set(m, "sandbox.early_start", &s.EarlyStart, ls.EarlyStart)

	union(m, "env.passthrough", &c.Env.Passthrough, l.Env.Passthrough)
	set(m, "env.passthrough_all", &c.Env.PassthroughAll, l.Env.PassthroughAll)
	for name, v := range l.Env.Set {
		c.Env.Set[name] = v
		c.Origins["env.set."+name] = m.origin
	}
	union(m, "secrets.env", &c.Secrets.Env, l.Secrets.Env)
	for name, p := range l.Secrets.Files {
		c.Secrets.Files[name] = p
		c.Origins["secrets.files."+name] = m.origin
		c.setEntry(entryKey("secrets.files."+name, ""), m.origin, src.exactLine("secrets.files."+name))
	}

	for name, t := range l.Tools {
		if src.file != "" {
			if c.at == nil {
				c.at = map[string]location{}
			}
			c.at["tools."+name] = location{file: src.file, line: src.exactLine("tools."+name, "tools."+name+".enabled", "tools."+name+".secrets", "tools."+name+".key")}
		}
		cur := c.Tools[name]
		if t.Enabled != nil {
			cur.Enabled = new(*t.Enabled)
			c.Origins["tools."+name+".enabled"] = m.origin
		}
		if t.Secrets != nil {
			cur.Secrets = new(*t.Secrets)
			c.Origins["tools."+name+".secrets"] = m.origin
		}
		if t.Key != nil {
			cur.Key = new(*t.Key)
			c.Origins["tools."+name+".key"] = m.origin
		}
		c.Tools[name] = cur
	}

	set(m, "egress.mode", &c.Egress.Mode, l.Egress.Mode)
	union(m, "egress.allow", &c.Egress.Allow, l.Egress.Allow)
	union(m, "egress.deny", &c.Egress.Deny, l.Egress.Deny)
	union(m, "egress.publish", &c.Egress.Publish, l.Egress.Publish)
	set(m, "egress.loopback_entries", &c.Egress.LoopbackEntries, l.Egress.LoopbackEntries)

	set(m, "proxy.default", &c.Proxy.Default, l.Proxy.Default)
	set(m, "proxy.mitm", &c.Proxy.MITM, l.Proxy.MITM)
	creds := make([]Credential, len(l.Proxy.Credentials))
	for i, lc := range l.Proxy.Credentials {
		creds[i] = Credential(lc)
	}
	union(m, "proxy.credentials", &c.Proxy.Credentials, creds)
	for i, lc := range creds {
		// Recorded by the entry's index in the merged list (EntryOrigin's value).
		k := entryKey("proxy.credentials", strconv.Itoa(slices.Index(c.Proxy.Credentials, lc)))
		if _, ok := c.entries[k]; !ok {
			at := "proxy.credentials[" + strconv.Itoa(i) + "]"
			c.setEntry(k, m.origin, src.exactLine(at+".value_file", at+".value_env", at+".host", at))
		}
	}
	if err := l.checkCredentialsMITM(src, c.Proxy.MITM); err != nil {
		return err
	}
	union(m, "proxy.git_push", &c.Proxy.GitPush, l.Proxy.GitPush)
	set(m, "proxy.git_ssh", &c.Proxy.GitSSH, l.Proxy.GitSSH)
	if err := l.checkGitPush(src, c); err != nil {
		return err
	}

	d, ld := &c.Docker, &l.Docker
	set(m, "docker.image", &d.Image, ld.Image)
	set(m, "docker.host", &d.Host, ld.Host)
	set(m, "docker.home", &d.Home, ld.Home)
	set(m, "docker.keep_container", &d.KeepContainer, ld.KeepContainer)
	set(m, "docker.agent_bind", &d.AgentBind, ld.AgentBind)
	mergeLimits(m, &c.Limits, &l.Limits, *ld)

	k, lk := &c.Krun, &l.Krun
	set(m, "krun.image", &k.Image, lk.Image)
	set(m, "krun.runtime", &k.Runtime, lk.Runtime)
	set(m, "krun.cpus", &k.CPUs, lk.CPUs)
	set(m, "krun.memory_mib", &k.MemoryMiB, lk.MemoryMiB)
	set(m, "krun.podman_socket", &k.PodmanSocket, lk.PodmanSocket)
	return l.checkKeepContainer(src, c)
}

// defaultContainerHome is docker.home's default: /home/<user>, or the host home's path
// when /home/<user> lies above or below it (HOME=/home, or /home/<user>/<dir>), which
// containerHome refuses in a file.
func defaultContainerHome(host Host) string {
	if h := "/home/" + host.User; containerHome(h, host.Home) == nil {
		return h
	}
	return host.Home
}

// checkKeepContainer refuses docker.keep_container with the krun isolator once l is
// merged into c: a libkrun microVM runs one command and cannot be exec'd into, so
// the krun backend would refuse the run (krun/helper.ErrKeep) only at launch. The
// error names l's own key: docker.keep_container when l sets it, else isolator.
func (l *layer) checkKeepContainer(src *source, c *Config) error {
	if c.Isolator != "krun" || !c.Docker.KeepContainer {
		return nil
	}
	key := "docker.keep_container"
	if l.Docker.KeepContainer == nil {
		if l.Isolator == nil {
			return nil
		}
		key = "isolator"
	}
	return src.fail(key, -1, invalidf(
		"docker.keep_container (%s) is not possible with the krun isolator (%s): a libkrun microVM runs exactly one command and cannot be exec'd into; run without it (docker.keep_container = false, --keep-container=false), or use --isolator=docker",
		originPhrase(c.Origins["docker.keep_container"]), originPhrase(c.Origins["isolator"])))
}

// mergeLimits applies [limits], and the deprecated docker.cpus and docker.memory as
// the limits they stand for (unless the same layer sets the limit itself).
func mergeLimits(m merger, c *Limits, l *layerLimits, d layerDocker) {
	set(m, "limits.pids", &c.Pids, l.Pids)
	for _, a := range []struct {
		alias, key      string
		aliasSet, owned bool // the layer sets the alias; the layer sets the key itself
		apply           func()
	}{
		{"docker.memory", "limits.memory", d.Memory != nil, l.Memory != nil, func() { c.Memory = *d.Memory }},
		{"docker.cpus", "limits.cpus", d.CPUs != nil, l.CPUs != nil, func() { c.CPUs = *d.CPUs }},
	} {
		switch {
		case !a.aliasSet:
			continue
		case a.owned:
			m.c.deprecated = append(m.c.deprecated, fmt.Sprintf("%s (in %s) is deprecated and ignored: %s in the same file sets the limit; remove it", a.alias, m.origin, a.key))
			continue
		}
		a.apply()
		m.c.Origins[a.key] = m.origin + " (" + a.alias + ")"
		m.c.deprecated = append(m.c.deprecated, fmt.Sprintf("%s (in %s) is deprecated: it sets %s; rename it", a.alias, m.origin, a.key))
	}
	set(m, "limits.memory", &c.Memory, l.Memory)
	set(m, "limits.cpus", &c.CPUs, l.CPUs)
}

// finish settles the values that depend on others once every layer is in, and
// returns warnings about the result.
func finish(c *Config) []string {
	if _, ok := c.Origins["krun.image"]; !ok {
		c.Krun.Image = c.Docker.Image
		c.Origins["krun.image"] = "default"
	}
	if c.Sandbox.Environment == "prod" && c.Sandbox.Mode == "auto" {
		// prod never runs unsandboxed: the layer that chose prod chose enforce.
		c.Sandbox.Mode = "enforce"
		c.Origins["sandbox.mode"] = c.Origins["sandbox.environment"]
	}
	// krun sizes its VM from the limits unless krun.cpus or krun.memory_mib are set.
	if c.Origins["krun.cpus"] == "default" && c.Limits.CPUs > 0 {
		c.Krun.CPUs = int(math.Ceil(c.Limits.CPUs))
		c.Origins["krun.cpus"] = c.Origins["limits.cpus"]
	}
	if c.Origins["krun.memory_mib"] == "default" && c.Limits.Memory != "" {
		c.Krun.MemoryMiB = int(c.Limits.MemoryBytes() >> 20)
		c.Origins["krun.memory_mib"] = c.Origins["limits.memory"]
	}
	warnings := slices.Clone(c.deprecated)
	if c.Sandbox.DockerSocket {
		warnings = append(warnings, "sandbox.docker_socket is on: the sandbox may reach the Docker daemon, which is root on its host (a container can mount / and run anything there): the sandbox is no boundary against it")
	}
	if c.Sandbox.BindHostCache {
		warnings = append(warnings, "sandbox.bind_host_cache is on: the sandbox writes your cache ("+c.Host.CacheHome+"), and what your tools load from it later (build caches, downloaded packages, hook environments) may be its")
	}
	if c.Sandbox.TerminalClipboard {
		warnings = append(warnings, "sandbox.terminal_clipboard is on: the sandbox may set your clipboard through the terminal, and what you paste next (into a host shell, say) may be its")
	}
	if c.Env.PassthroughAll {
		warnings = append(warnings, "env.passthrough_all is on: the sandbox sees every host environment variable, secrets included")
	}
	if c.Egress.LoopbackEntries == "ignore" {
		c.Egress.Allow = slices.DeleteFunc(c.Egress.Allow, func(e string) bool {
			if what := loopbackEntry(e); what != "" {
				warnings = append(warnings, fmt.Sprintf("ignoring egress.allow entry %q (%s; egress.loopback_entries = \"ignore\"): it would open nothing, the proxy never connects to the host's own loopback", e, what))
				return true
			}
			return false
		})
	}
	if w := idleEgressRules(c); w != "" {
		warnings = append(warnings, w)
	}
	return warnings
}

// idleEgressRules is the warning that egress.allow and egress.deny entries do nothing
// under egress.mode "open" (the host's network, unfiltered) or "none" (no network),
// naming where the entries and the mode come from; "" when there is nothing to say.
// Under "none" it speaks only of entries set where the mode is, or on the command
// line (--allow): a user config's allow list that a project file or --egress=none
// overrides is a deliberate tightening, and warning there would fire on every run of
// such a project.
func idleEgressRules(c *Config) string {
	mode := c.Egress.Mode
	if mode != "open" && mode != "none" {
		return ""
	}
	var idle []string
	for _, k := range []struct {
		key     string
		entries []string
	}{{"egress.allow", c.Egress.Allow}, {"egress.deny", c.Egress.Deny}} {
		o := c.Origins[k.key]
		if len(k.entries) == 0 || mode == "none" && o != c.Origins["egress.mode"] && !strings.HasPrefix(o, "flag ") {
			continue
		}
		idle = append(idle, fmt.Sprintf("%s (%s)", k.key, originPhrase(o)))
	}
	if len(idle) == 0 {
		return ""
	}
	what := "the sandbox uses the host's network unfiltered"
	if mode == "none" {
		what = "the sandbox reaches no network but its own loopback"
	}
	verb := "has"
	if len(idle) > 1 {
		verb = "have"
	}
	return fmt.Sprintf("%s %s no effect while egress.mode is %q (%s): %s", strings.Join(idle, " and "), verb, mode, originPhrase(c.Origins["egress.mode"]), what)
}
