package wire

import "strings"

// LoaderEnvPrefix carries, in bwrap's environment, a variable for the command that
// the host's dynamic loader or C library would act on (LoaderVar): bwrap, and pasta
// before it, run on the host before any namespace, with the environment the command
// is to get, and a loader honouring LD_PRELOAD, LD_LIBRARY_PATH or LD_AUDIT there
// would load, as the user and outside the sandbox, a library the sandbox can write
// (LD_DEBUG_OUTPUT would write a file of the host). The host renames such a variable
// NAME to LoaderEnvPrefix+NAME (HostSafeEnv); the bwrap init, a static program that
// no loader starts, names it back (RestoreLoaderEnv) before it starts anything.
const LoaderEnvPrefix = "DEVSANDBOX_LOADER_"

// unsecureEnv are the variables glibc removes from a setuid program's environment
// (its UNSECURE_ENVVARS) beyond LD_*, with GLIBC_TUNABLES: what the loader and the C
// library read to load, open or write a file.
var unsecureEnv = map[string]bool{
	"GCONV_PATH": true, "GETCONF_DIR": true, "GLIBC_TUNABLES": true, "HOSTALIASES": true,
	"LOCALDOMAIN": true, "LOCPATH": true, "MALLOC_TRACE": true, "NIS_PATH": true,
	"NLSPATH": true, "RESOLV_HOST_CONF": true, "RES_OPTIONS": true, "TMPDIR": true,
	"TZDIR": true,
}

// LoaderVar reports whether the host's dynamic loader or C library acts on the
// variable name: every LD_* (glibc's and musl's loaders read only such names, and
// new ones come), and glibc's other variables that name a file to load or write.
func LoaderVar(name string) bool {
	return strings.HasPrefix(name, "LD_") || unsecureEnv[name]
}

// HostSafeEnv returns env ("NAME=VALUE" entries) for a process started on the host
// on the sandbox's behalf (bwrap): each LoaderVar renamed with LoaderEnvPrefix, in
// place, the rest as it is. env itself is not changed.
func HostSafeEnv(env []string) []string {
	var out []string
	for i, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !LoaderVar(name) {
			continue
		}
		if out == nil {
			out = append([]string(nil), env...)
		}
		out[i] = LoaderEnvPrefix + kv
	}
	if out == nil {
		return env
	}
	return out
}

// RestoreLoaderEnv undoes ScopeEnv, then HostSafeEnv, in the init's environment: each
// LoaderEnvPrefix+NAME whose NAME is a LoaderVar becomes NAME again (another
// variable of that prefix is left as it is). environ, set and unset are the
// environment's (os.Environ, os.Setenv, os.Unsetenv).
func RestoreLoaderEnv(environ []string, set func(name, value string) error, unset func(name string) error) error {
	if err := restoreScopeEnv(environ, set, unset); err != nil {
		return err
	}
	return restorePrefixed(environ, LoaderEnvPrefix, func(name, orig string) bool { return LoaderVar(orig) }, set, unset)
}

// restorePrefixed gives each variable of environ named prefix+NAME, that carry
// accepts, back its own name NAME (the carrier unset).
func restorePrefixed(environ []string, prefix string, carry func(name, orig string) bool, set func(name, value string) error, unset func(name string) error) error {
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		orig, ok := strings.CutPrefix(name, prefix)
		if !ok || !carry(name, orig) {
			continue
		}
		if err := unset(name); err != nil {
			return err
		}
		if err := set(orig, value); err != nil {
			return err
		}
	}
	return nil
}

// ScopeEnvPrefix carries, in systemd-run's environment (a run placed in a systemd
// user scope for its limits), a variable of the command's that would steer
// systemd-run on the host (ScopeVar): where it finds the user's systemd manager and
// bus, and how libsystemd behaves. A project's env.set could otherwise point the
// host's systemd-run at a bus a sandbox planted, which could "place" the scope and
// apply no limit. systemd-run gets devsandbox's own values instead, named in
// ScopeAddedEnv; the bwrap init removes those and names the command's back
// (RestoreLoaderEnv).
const ScopeEnvPrefix = "DEVSANDBOX_SCOPE_"

// ScopeAddedEnv lists (comma-separated) the ScopeVar names whose values in the
// init's environment are devsandbox's own, given to systemd-run, not the command's.
const ScopeAddedEnv = "DEVSANDBOX_SCOPE_ADDED"

// ScopeVar reports whether systemd-run (libsystemd) reads name to find or talk to
// the user's systemd manager: XDG_RUNTIME_DIR, the D-Bus addresses, SYSTEMD_*.
func ScopeVar(name string) bool {
	switch name {
	case "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "DBUS_SYSTEM_BUS_ADDRESS":
		return true
	}
	return strings.HasPrefix(name, "SYSTEMD_")
}

// ScopeEnv returns env (bwrap's, HostSafeEnv's) for systemd-run: each ScopeVar of
// the command's renamed with ScopeEnvPrefix, then host's values (devsandbox's own)
// of XDG_RUNTIME_DIR and DBUS_SESSION_BUS_ADDRESS, named in ScopeAddedEnv. env
// itself is not changed.
func ScopeEnv(env []string, host map[string]string) []string {
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if ScopeVar(name) || strings.HasPrefix(name, ScopeEnvPrefix) {
			kv = ScopeEnvPrefix + kv
		}
		out = append(out, kv)
	}
	var added []string
	for _, name := range []string{"XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS"} {
		if v, ok := host[name]; ok {
			out = append(out, name+"="+v)
			added = append(added, name)
		}
	}
	return append(out, ScopeAddedEnv+"="+strings.Join(added, ","))
}

// restoreScopeEnv undoes ScopeEnv in the init's environment, when ScopeAddedEnv is
// there: devsandbox's own values go, and each ScopeEnvPrefix+NAME becomes NAME.
func restoreScopeEnv(environ []string, set func(name, value string) error, unset func(name string) error) error {
	var added string
	var scoped bool
	for _, kv := range environ {
		if name, value, _ := strings.Cut(kv, "="); name == ScopeAddedEnv {
			added, scoped = value, true
		}
	}
	if !scoped {
		return nil
	}
	if err := unset(ScopeAddedEnv); err != nil {
		return err
	}
	for _, name := range strings.Split(added, ",") {
		if ScopeVar(name) {
			if err := unset(name); err != nil {
				return err
			}
		}
	}
	return restorePrefixed(environ, ScopeEnvPrefix, func(name, _ string) bool { return name != ScopeAddedEnv }, set, unset)
}
