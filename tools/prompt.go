package tools

// Shell comforts: prompt themes, zsh frameworks and terminal multiplexers. Each is
// configuration the host's shell or multiplexer loads and runs (starship's custom
// modules run commands, oh-my-zsh and tmux plugins are code), so all of it is bound
// read-only; what they write (caches, completion dumps, sessions) lands in the
// sandbox home.

// Starship exposes the starship prompt's configuration (STARSHIP_CONFIG, else
// ~/.config/starship.toml) and install. Its cache (STARSHIP_CACHE, else
// ~/.cache/starship) stays the sandbox's own.
func Starship() Tool {
	return Tool{
		Name:        "starship",
		Description: "starship prompt: starship.toml and install (read-only)",
		Detect: func(h Host) bool {
			return h.onPath("starship") || h.exists(starshipConfig(h).src)
		},
		Bindings: func(h Host) []Binding {
			return h.withExecutables([]Binding{starshipConfig(h).bind(RO)}, "starship")
		},
		Env: []string{"STARSHIP_CONFIG"},
	}
}

func starshipConfig(h Host) place { return h.envPlace("STARSHIP_CONFIG", h.config("starship.toml")) }

// OhMyZsh exposes oh-my-zsh (ZSH, else ~/.oh-my-zsh) with its custom directory
// (ZSH_CUSTOM, by default inside it) read-only. Its cache directory defaults to
// $ZSH/cache; oh-my-zsh moves it to ~/.cache/oh-my-zsh when that is not writable, so
// the sandbox keeps its own.
func OhMyZsh() Tool {
	return Tool{
		Name:        "oh-my-zsh",
		Description: "oh-my-zsh: the framework, custom plugins and themes (read-only)",
		Detect:      func(h Host) bool { return h.exists(ohMyZsh(h).src) },
		Bindings: func(h Host) []Binding {
			bs := []Binding{ohMyZsh(h).bind(RO)}
			if p, ok := h.usable(h.Env["ZSH_CUSTOM"]); ok {
				bs = append(bs, p.bind(RO))
			}
			return bs
		},
		Env: []string{"ZSH", "ZSH_CUSTOM"},
	}
}

func ohMyZsh(h Host) place { return h.envPlace("ZSH", h.home(".oh-my-zsh")) }

// Powerlevel10k exposes the powerlevel10k theme: its configuration (~/.p10k.zsh) and a
// manual install (~/powerlevel10k), read-only; installed as an oh-my-zsh theme it
// comes with oh-my-zsh. Its instant-prompt cache and gitstatus daemon live in the
// sandbox's cache.
func Powerlevel10k() Tool {
	return Tool{
		Name:        "powerlevel10k",
		Description: "powerlevel10k: ~/.p10k.zsh and ~/powerlevel10k (read-only)",
		Detect: func(h Host) bool {
			return h.exists(h.Home+"/.p10k.zsh") || h.exists(h.Home+"/powerlevel10k")
		},
		Bindings: func(h Host) []Binding {
			return []Binding{h.home(".p10k.zsh").bind(RO), h.home("powerlevel10k").bind(RO)}
		},
	}
}

// Tmux exposes tmux's configuration (~/.tmux.conf, or tmux.conf in ~/.config/tmux)
// and its plugins (~/.tmux/plugins, tpm's default), read-only. The server socket is
// the sandbox's own: tmux inside never attaches to the host's sessions.
func Tmux() Tool {
	return Tool{
		Name:        "tmux",
		Description: "tmux: configuration and plugins (read-only)",
		Detect: func(h Host) bool {
			return h.onPath("tmux") || h.exists(h.Home+"/.tmux.conf") || h.exists(h.config("tmux").src)
		},
		Bindings: func(h Host) []Binding {
			return []Binding{h.home(".tmux.conf").bind(RO), h.config("tmux").bind(RO), h.home(".tmux").bind(RO)}
		},
	}
}

// Zellij exposes zellij's configuration directory (ZELLIJ_CONFIG_DIR, else
// ~/.config/zellij: config.kdl, layouts, themes, plugins) and a ZELLIJ_CONFIG_FILE,
// read-only. Its cache and session data stay the sandbox's own.
func Zellij() Tool {
	return Tool{
		Name:        "zellij",
		Description: "zellij: configuration, layouts and plugins (read-only)",
		Detect: func(h Host) bool {
			return h.onPath("zellij") || h.exists(zellijConfig(h).src)
		},
		Bindings: func(h Host) []Binding {
			bs := []Binding{zellijConfig(h).bind(RO)}
			if p, ok := h.usable(h.Env["ZELLIJ_CONFIG_FILE"]); ok {
				bs = append(bs, p.bind(RO))
			}
			return h.withExecutables(bs, "zellij")
		},
		Env: []string{"ZELLIJ_CONFIG_DIR", "ZELLIJ_CONFIG_FILE"},
	}
}

func zellijConfig(h Host) place { return h.envPlace("ZELLIJ_CONFIG_DIR", h.config("zellij")) }
