package config

// Config is the effective configuration after all layers are merged and validated.
// Every field holds its final value: defaults are filled in, `~` is expanded in paths.
type Config struct {
	Isolator string // auto | bwrap | docker | krun

	Sandbox Sandbox
	Env     Env
	Secrets Secrets
	Tools   map[string]ToolConfig // keyed by tool name; only tools named in some layer
	Egress  Egress
	Proxy   Proxy
	Docker  Docker
	Krun    Krun
	Limits  Limits

	// Host is the snapshot of the host environment the config was loaded against.
	Host Host

	// Files lists the config files that were applied, lowest layer first.
	Files []string
	// Origins maps a dotted key ("sandbox.mode") to the layer that last set it:
	// "default", a file path, "flag --mode" or "env DEVSANDBOX_ISOLATOR". A list's
	// origin is the last layer that gave entries for it. Table entries have keys of
	// their own: "env.set.NAME", "secrets.files.NAME", "tools.<name>.enabled". A key
	// that no layer set and that has no default is absent.
	Origins map[string]string

	// deprecated are notes on deprecated keys the layers used, turned into warnings.
	deprecated []string
	// at is where each [tools.<name>] table was given ("tools.<name>"), in the last
	// file that gave it: Where reads it.
	at map[string]location
	// entries is where each entry of the lists and tables EntryOrigin answers for was
	// given, keyed by entryKey.
	entries map[string]string
	// explicit is the --config file applied, nil when none.
	explicit *explicitFile
}

// Sandbox is the [sandbox] table.
type Sandbox struct {
	Mode         string   // enforce | auto | off
	Environment  string   // dev | prod
	ReadOnly     bool     // project read-only except WritableDirs and .git
	WritableDirs []string // project-relative
	HidePaths    []string // absolute, `~` expanded
	MaskFiles    []string // globs matched against base names in the project
	MaskAllow    []string // globs exempt from MaskFiles
	MaskSkip     []string // directory names not scanned for masks
	ROBinds      []string // absolute, `~` expanded; same path inside
	RWBinds      []string // absolute, `~` expanded; same path inside
	HostMounts   []Mount  // from sandbox.host_mounts and --mount
	SystemBinds  []string // empty = minimal default; ["host"] = read-only `/`
	Tmp          string   // session | tmpfs | shm
	// TmpSize bounds a tmpfs /tmp (a size such as "512m"; "" = the kernel's
	// default, half the memory): bwrap's with Tmp "tmpfs", and the container's.
	TmpSize string
	// DiskReserve is the free space the run leaves on each host file system the
	// sandbox writes (a size such as "1g"; "0" = no reserve): under it the run is
	// refused, or stopped.
	DiskReserve   string
	BindHostCache bool
	DockerSocket  bool
	// TerminalClipboard lets the command write the clipboard through the relayed
	// terminal (OSC 52 writes; never its query).
	TerminalClipboard bool
	// RelaxSyscalls are the syscall policy's groups allowed for this sandbox
	// (syscalls.Groups); empty is the strict policy.
	RelaxSyscalls []string
	// EarlyStart lets bwrap's early start be used (true, the default; whether it is
	// is config.EarlyStartVar's): false turns it off. Read after an early start may
	// have been made, it abandons that start and removes the launch's record, so that
	// the next launch makes none.
	EarlyStart bool
}

// Mount is one `SRC:DST[:ro]` entry.
type Mount struct {
	Source   string
	Dest     string
	ReadOnly bool
	// Origin is where the entry came from: "FILE:LINE" (the entry's own line;
	// "FILE" when unknown) or "flag --mount". Two layers giving the same mount keep
	// the first's. It is not part of the mount: String leaves it out.
	Origin string
}

// Env is the [env] table.
type Env struct {
	Passthrough    []string
	PassthroughAll bool
	Set            map[string]string
}

// Secrets is the [secrets] table. Values never live here: only names and host paths.
type Secrets struct {
	Env   []string          // names whose host values are delivered as env
	Files map[string]string // NAME = host path, delivered at /run/secrets/NAME
}

// ToolConfig is one [tools.<name>] table. Nil means "not set": auto-detect / default true.
type ToolConfig struct {
	Enabled *bool
	Secrets *bool
	// Key is where the tool's API keys (tools.Tool.Keys) live: "env" (nil: the
	// default) passes them into the sandbox as secrets; "proxy" holds them in the
	// egress proxy, which adds them toward the tool's API, and the sandbox gets
	// placeholders (see isolator/planner.ToolKeys).
	Key *string
}

// KeyProxy is the tools.<name>.key value that holds the tool's keys outside.
const KeyProxy = "proxy"

// Egress is the [egress] table.
type Egress struct {
	Mode  string // open | none | proxy | allowlist
	Allow []string
	Deny  []string
	// Publish are "HOST_PORT:SANDBOX_PORT" entries: the host's 127.0.0.1:HOST_PORT
	// reaches the sandbox's port.
	Publish []string
	// LoopbackEntries is what an allow entry of an unspecified or loopback address (or
	// localhost) is: "error" (the default), or "ignore", which drops it with a warning.
	// Such an entry never reaches the host's loopback either way.
	LoopbackEntries string
}

// Proxy is the [proxy] table.
type Proxy struct {
	Default     string // allow | deny
	MITM        bool
	Credentials []Credential
	// GitPush are the ref patterns a sandboxed git push may change (egress.RefPattern,
	// as written); empty: no push policy.
	GitPush []string
	// GitSSH allows CONNECTs to port 22 while GitPush is set.
	GitSSH bool
}

// Credential is one [[proxy.credentials]] entry.
type Credential struct {
	Host           string
	Header         string
	ValueEnv       string
	ValueFile      string
	Format         string
	PlaceholderEnv string
}

// Docker is the [docker] table. docker.cpus and docker.memory are deprecated
// aliases of limits.cpus and limits.memory, which carry their values.
type Docker struct {
	Image         string
	Host          string
	Home          string
	KeepContainer bool
	// AgentBind lets a local engine bind the ssh agent relay's socket (read-only,
	// proved per session) rather than carry the agent over the Engine API: faster,
	// but a departure from DESIGN guarantee 11. Off by default.
	AgentBind bool
}

// Krun is the [krun] table.
type Krun struct {
	Image        string
	Runtime      string
	CPUs         int
	MemoryMiB    int
	PodmanSocket string
}

// Limits is the [limits] table: what one sandbox may consume, on every isolator.
type Limits struct {
	Pids   int     // tasks; 0 = no limit
	Memory string  // a size such as "512m" or "4g"; "" = no limit
	CPUs   float64 // 0 = no limit
}

// TmpSizeBytes is TmpSize in bytes (0 when unset). TmpSize was validated at load.
func (s Sandbox) TmpSizeBytes() int64 {
	n, _ := parseSize(s.TmpSize)
	return n
}

// DiskReserveBytes is DiskReserve in bytes (0: no reserve). It was validated at load.
func (s Sandbox) DiskReserveBytes() int64 {
	n, _ := parseSize(s.DiskReserve)
	return n
}

// MemoryBytes is Memory in bytes (0 when unset). Memory was validated at load.
func (l Limits) MemoryBytes() int64 {
	n, _ := parseSize(l.Memory)
	return n
}

// Host is what the config layer read from the process environment. It is the only
// place environment variables are read; everything downstream takes values from here.
type Host struct {
	Vars       map[string]string // the full host environment
	Home       string
	User       string
	UID, GID   int
	ConfigHome string // $XDG_CONFIG_HOME or ~/.config
	DataHome   string // $XDG_DATA_HOME or ~/.local/share
	StateHome  string // $XDG_STATE_HOME or ~/.local/state
	CacheHome  string // $XDG_CACHE_HOME or ~/.cache
	RuntimeDir string // $XDG_RUNTIME_DIR, may be empty
}

// Flags are the command-line overrides, the highest layer. Nil pointers are "not given".
type Flags struct {
	ConfigFile    string   // --config: replaces the user file
	Isolator      *string  // --isolator
	Mode          *string  // --mode
	Egress        *string  // --egress
	Allow         []string // --allow, repeatable
	Publish       []string // --publish HOST_PORT:SANDBOX_PORT, repeatable
	Env           []string // -e NAME=VALUE (env.set) or -e NAME (secrets.env)
	SecretFiles   []string // --secret-file NAME=PATH
	Mounts        []string // --mount SRC[:DST][:ro]
	ReadOnly      *bool    // --read-only
	KeepContainer *bool    // --keep-container
	Image         *string  // --image, applies to the selected container isolator
	Pids          *int     // --pids
	Memory        *string  // --memory
	CPUs          *float64 // --cpus
	// Command is the command to run, after the flags (nil: the user's shell, or a
	// subcommand): the tools whose keys follow their command line read it
	// (tools.Host.Command).
	Command []string
}
