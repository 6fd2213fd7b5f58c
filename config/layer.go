package config

// layer is one configuration file, or the part of the environment or flags that maps
// onto the schema. Scalars are pointers so that "not set" differs from the zero value;
// nil lists and maps are "not set" too. The toml tags are the schema's keys.
type layer struct {
	Isolator *string              `toml:"isolator"`
	Sandbox  layerSandbox         `toml:"sandbox"`
	Env      layerEnv             `toml:"env"`
	Secrets  layerSecrets         `toml:"secrets"`
	Tools    map[string]layerTool `toml:"tools"`
	Egress   layerEgress          `toml:"egress"`
	Proxy    layerProxy           `toml:"proxy"`
	Docker   layerDocker          `toml:"docker"`
	Krun     layerKrun            `toml:"krun"`
	Limits   layerLimits          `toml:"limits"`
}

type layerSandbox struct {
	Mode          *string  `toml:"mode"`
	Environment   *string  `toml:"environment"`
	ReadOnly      *bool    `toml:"read_only"`
	WritableDirs  []string `toml:"writable_dirs"`
	HidePaths     []string `toml:"hide_paths"`
	MaskFiles     []string `toml:"mask_files"`
	MaskAllow     []string `toml:"mask_allow"`
	MaskSkip      []string `toml:"mask_skip"`
	ROBinds       []string `toml:"ro_binds"`
	RWBinds       []string `toml:"rw_binds"`
	HostMounts    []string `toml:"host_mounts"`
	SystemBinds   []string `toml:"system_binds"`
	Tmp           *string  `toml:"tmp"`
	TmpSize       *string  `toml:"tmp_size"`
	DiskReserve   *string  `toml:"disk_reserve"`
	BindHostCache *bool    `toml:"bind_host_cache"`
	DockerSocket  *bool    `toml:"docker_socket"`
	// TerminalClipboard is sandbox.terminal_clipboard.
	TerminalClipboard *bool    `toml:"terminal_clipboard"`
	RelaxSyscalls     []string `toml:"relax_syscalls"`
	// EarlyStart is sandbox.early_start.
	EarlyStart *bool `toml:"early_start"`

	// mounts is HostMounts parsed by check; --mount fills it directly.
	mounts []Mount
}

type layerEnv struct {
	Passthrough    []string          `toml:"passthrough"`
	PassthroughAll *bool             `toml:"passthrough_all"`
	Set            map[string]string `toml:"set"`
}

type layerSecrets struct {
	Env   []string          `toml:"env"`
	Files map[string]string `toml:"files"`
}

type layerTool struct {
	Enabled *bool   `toml:"enabled"`
	Secrets *bool   `toml:"secrets"`
	Key     *string `toml:"key"`
}

type layerEgress struct {
	Mode            *string  `toml:"mode"`
	Allow           []string `toml:"allow"`
	Deny            []string `toml:"deny"`
	Publish         []string `toml:"publish"`
	LoopbackEntries *string  `toml:"loopback_entries"`
}

type layerProxy struct {
	Default     *string           `toml:"default"`
	MITM        *bool             `toml:"mitm"`
	Credentials []layerCredential `toml:"credentials"`
	GitPush     []string          `toml:"git_push"`
	GitSSH      *bool             `toml:"git_ssh"`
}

type layerCredential struct {
	Host           string `toml:"host"`
	Header         string `toml:"header"`
	ValueEnv       string `toml:"value_env"`
	ValueFile      string `toml:"value_file"`
	Format         string `toml:"format"`
	PlaceholderEnv string `toml:"placeholder_env"`
}

type layerDocker struct {
	Image         *string  `toml:"image"`
	Host          *string  `toml:"host"`
	Home          *string  `toml:"home"`
	KeepContainer *bool    `toml:"keep_container"`
	AgentBind     *bool    `toml:"agent_bind"`
	CPUs          *float64 `toml:"cpus"`   // deprecated: limits.cpus
	Memory        *string  `toml:"memory"` // deprecated: limits.memory
}

type layerKrun struct {
	Image        *string `toml:"image"`
	Runtime      *string `toml:"runtime"`
	CPUs         *int    `toml:"cpus"`
	MemoryMiB    *int    `toml:"memory_mib"`
	PodmanSocket *string `toml:"podman_socket"`
}

type layerLimits struct {
	Pids   *int     `toml:"pids"`
	Memory *string  `toml:"memory"`
	CPUs   *float64 `toml:"cpus"` // go-toml accepts integers here too
}
