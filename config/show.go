package config

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/devsandbox/devsandbox/internal/termsafe"
)

// entry is one key of the effective configuration as `config show` prints it.
type entry struct {
	table  []string // the enclosing TOML table, nil at the top level
	name   string   // the key in table; "" for an empty table shown as its header
	value  any      // string, bool, int, float64, []string, []credentialJSON, map[string]string{}
	origin string
	unset  bool // an optional key no layer set: no value to show
}

// credentialJSON is one [[proxy.credentials]] entry with the schema's names.
type credentialJSON struct {
	Host           string `json:"host"`
	Header         string `json:"header"`
	ValueEnv       string `json:"value_env,omitempty"`
	ValueFile      string `json:"value_file,omitempty"`
	Format         string `json:"format,omitempty"`
	PlaceholderEnv string `json:"placeholder_env,omitempty"`
}

// entries lists the effective configuration in schema order, one line per key (one
// function, so that the order reads top to bottom as the schema does). Nothing from
// c.Host.Vars is listed: the host environment may hold secrets.
func entries(c *Config) []entry {
	var out []entry
	origin := func(key string) string {
		if o := c.Origins[key]; o != "" {
			return o
		}
		return "default"
	}
	add := func(table []string, name string, v any) {
		key := strings.Join(append(slices.Clone(table), name), ".")
		out = append(out, entry{table: table, name: name, value: v, origin: origin(key)})
	}
	optional := func(table []string, name string, v any) {
		key := strings.Join(append(slices.Clone(table), name), ".")
		out = append(out, entry{table: table, name: name, value: v, origin: origin(key), unset: c.Origins[key] == ""})
	}
	strs := func(s []string) []string { return append([]string{}, s...) } // never nil: shown as []
	strTable := func(table []string, m map[string]string) {
		if len(m) == 0 {
			out = append(out, entry{table: table, value: map[string]string{}, origin: "default"})
		}
		for _, name := range sortedKeys(m) {
			add(table, name, m[name])
		}
	}

	add(nil, "isolator", c.Isolator)

	sb, s := []string{"sandbox"}, c.Sandbox
	add(sb, "mode", s.Mode)
	add(sb, "environment", s.Environment)
	add(sb, "read_only", s.ReadOnly)
	add(sb, "writable_dirs", strs(s.WritableDirs))
	add(sb, "hide_paths", strs(s.HidePaths))
	add(sb, "mask_files", strs(s.MaskFiles))
	add(sb, "mask_allow", strs(s.MaskAllow))
	add(sb, "mask_skip", strs(s.MaskSkip))
	add(sb, "ro_binds", strs(s.ROBinds))
	add(sb, "rw_binds", strs(s.RWBinds))
	mounts := []string{}
	for _, m := range s.HostMounts {
		mounts = append(mounts, m.String())
	}
	add(sb, "host_mounts", mounts)
	add(sb, "system_binds", strs(s.SystemBinds))
	add(sb, "tmp", s.Tmp)
	add(sb, "tmp_size", s.TmpSize)
	add(sb, "disk_reserve", s.DiskReserve)
	add(sb, "bind_host_cache", s.BindHostCache)
	add(sb, "docker_socket", s.DockerSocket)
	add(sb, "terminal_clipboard", s.TerminalClipboard)
	add(sb, "relax_syscalls", strs(s.RelaxSyscalls))
	add(sb, "early_start", s.EarlyStart)

	env := []string{"env"}
	add(env, "passthrough", strs(c.Env.Passthrough))
	add(env, "passthrough_all", c.Env.PassthroughAll)
	strTable([]string{"env", "set"}, c.Env.Set)

	add([]string{"secrets"}, "env", strs(c.Secrets.Env))
	strTable([]string{"secrets", "files"}, c.Secrets.Files)

	if len(c.Tools) == 0 {
		out = append(out, entry{table: []string{"tools"}, value: map[string]string{}, origin: "default"})
	}
	for _, name := range sortedKeys(c.Tools) {
		t, table := c.Tools[name], []string{"tools", name}
		if t.Enabled != nil {
			add(table, "enabled", *t.Enabled)
		}
		if t.Secrets != nil {
			add(table, "secrets", *t.Secrets)
		}
		if t.Key != nil {
			add(table, "key", *t.Key)
		}
	}

	eg := []string{"egress"}
	add(eg, "mode", c.Egress.Mode)
	add(eg, "allow", strs(c.Egress.Allow))
	add(eg, "deny", strs(c.Egress.Deny))
	add(eg, "publish", strs(c.Egress.Publish))
	add(eg, "loopback_entries", c.Egress.LoopbackEntries)

	px := []string{"proxy"}
	add(px, "default", c.Proxy.Default)
	add(px, "mitm", c.Proxy.MITM)
	creds := []credentialJSON{}
	for _, cr := range c.Proxy.Credentials {
		creds = append(creds, credentialJSON(cr))
	}
	add(px, "git_push", strs(c.Proxy.GitPush))
	add(px, "git_ssh", c.Proxy.GitSSH)
	add(px, "credentials", creds)

	d := []string{"docker"}
	add(d, "image", c.Docker.Image)
	add(d, "host", c.Docker.Host)
	add(d, "home", c.Docker.Home)
	add(d, "keep_container", c.Docker.KeepContainer)
	add(d, "agent_bind", c.Docker.AgentBind)

	k := []string{"krun"}
	add(k, "image", c.Krun.Image)
	add(k, "runtime", c.Krun.Runtime)
	add(k, "cpus", c.Krun.CPUs)
	add(k, "memory_mib", c.Krun.MemoryMiB)
	add(k, "podman_socket", c.Krun.PodmanSocket)

	lm := []string{"limits"}
	add(lm, "pids", c.Limits.Pids)
	optional(lm, "memory", c.Limits.Memory)
	optional(lm, "cpus", c.Limits.CPUs)
	return out
}

// String is the mount as sandbox.host_mounts writes it: "SRC:DST" or "SRC:DST:ro".
func (m Mount) String() string {
	if m.ReadOnly {
		return m.Source + ":" + m.Dest + ":ro"
	}
	return m.Source + ":" + m.Dest
}

// Show writes the effective configuration as TOML, in schema order, each key with a
// trailing comment naming its origin: "# default", "# /path/config.toml",
// "# flag --mode", "# env DEVSANDBOX_ISOLATOR". An optional key no layer set is a
// comment ("# cpus: not set (default)"). The output is valid TOML that
// ValidateFile accepts; a list's origin is the last layer that added to it. Nothing
// from the host environment is printed.
func Show(c *Config, w io.Writer) error {
	bw := bufio.NewWriter(w)
	var table []string
	for i, e := range entries(c) {
		if i == 0 || !slices.Equal(e.table, table) {
			table = e.table
			if i > 0 {
				bw.WriteString("\n")
			}
			if e.name == "" { // an empty table
				fmt.Fprintf(bw, "[%s]  # %s\n", tomlKey(table), termsafe.Line(e.origin))
				continue
			}
			if table != nil {
				fmt.Fprintf(bw, "[%s]\n", tomlKey(table))
			}
		}
		switch v := e.value.(type) {
		case []credentialJSON:
			if len(v) == 0 {
				fmt.Fprintf(bw, "%s = []  # %s\n", e.name, termsafe.Line(e.origin))
			}
			for _, cr := range v {
				fmt.Fprintf(bw, "\n[[%s]]\n", tomlKey(append(slices.Clone(table), e.name)))
				for _, f := range [][2]string{{"host", cr.Host}, {"header", cr.Header}, {"value_env", cr.ValueEnv},
					{"value_file", cr.ValueFile}, {"format", cr.Format}, {"placeholder_env", cr.PlaceholderEnv}} {
					if f[1] != "" {
						fmt.Fprintf(bw, "%s = %s  # %s\n", f[0], quote(f[1]), termsafe.Line(e.origin))
					}
				}
			}
		default:
			if e.unset {
				fmt.Fprintf(bw, "# %s: not set (%s)\n", e.name, termsafe.Line(e.origin))
			} else {
				fmt.Fprintf(bw, "%s = %s  # %s\n", tomlKey([]string{e.name}), tomlValue(v), termsafe.Line(e.origin))
			}
		}
	}
	return bw.Flush()
}

// ShowJSON writes the effective configuration as one JSON object, in schema order:
// {"sandbox.mode": {"value": "enforce", "origin": "default"}, ...}. Keys are those of
// Config.Origins; an empty table appears under its own key ("env.set") with the
// value {}, and an optional key no layer set has the value null.
func ShowJSON(c *Config, w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("{")
	for i, e := range entries(c) {
		key := strings.Join(e.table, ".")
		if e.name != "" {
			key = strings.Join(append(slices.Clone(e.table), e.name), ".")
		}
		v := e.value
		if e.unset {
			v = nil
		}
		item, err := json.Marshal(struct {
			Value  any    `json:"value"`
			Origin string `json:"origin"`
		}{v, e.origin})
		if err != nil {
			return err
		}
		k, _ := json.Marshal(key)
		if i > 0 {
			bw.WriteString(",")
		}
		fmt.Fprintf(bw, "\n  %s: %s", k, item)
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}

// tomlValue writes a value of an entry as TOML.
func tomlValue(v any) string {
	switch v := v.(type) {
	case string:
		return quote(v)
	case bool:
		return strconv.FormatBool(v)
	case int:
		return strconv.Itoa(v)
	case float64:
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		return s
	case []string:
		q := make([]string, len(v))
		for i, s := range v {
			q[i] = quote(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	panic(fmt.Sprintf("config: no TOML form for %T", v))
}

// quote writes s as a TOML basic string. Unlike strconv.Quote it never writes \x or
// \a escapes, which TOML does not have.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f || r == utf8.RuneError:
			fmt.Fprintf(&b, `\u%04X`, r)
		case !unicode.IsPrint(r): // C1 controls, bidi overrides, U+2028: shown, not acted on
			if r > 0xFFFF {
				fmt.Fprintf(&b, `\U%08X`, r)
			} else {
				fmt.Fprintf(&b, `\u%04X`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlKey writes a dotted key, quoting the parts that are not bare keys.
func tomlKey(parts []string) string {
	q := make([]string, len(parts))
	for i, p := range parts {
		q[i] = p
		if !bareKey(p) {
			q[i] = quote(p)
		}
	}
	return strings.Join(q, ".")
}

func bareKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
