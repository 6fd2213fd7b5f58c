package tools

// Python exposes Python installations under the home read-only — pyenv, uv's managed
// interpreters (the target of a project .venv made by uv), uv and pipx tool
// environments, uv itself — and pip's and uv's configuration. Installing an interpreter
// or a tool from inside the sandbox fails where the host keeps them.
//
// ~/.pypirc is never bound (upload credentials). Publishing tokens are not declared.
// pip's and uv's caches are not bound: uv hard-links from its cache into environments,
// so a writable host cache would let the sandbox alter files host venvs use; the sandbox
// home keeps its own.
func Python() Tool {
	return Tool{
		Name:        "python",
		Description: "Python: pyenv, uv-managed pythons and tools, pipx venvs (read-only), pip/uv config; no ~/.pypirc, no cache",
		Detect: func(h Host) bool {
			for _, c := range []string{"python3", "python", "pip3", "pip", "uv", "pipx"} {
				if h.onPath(c) {
					return true
				}
			}
			return h.exists(pyenvRoot(h).src)
		},
		Bindings: func(h Host) []Binding {
			bs := []Binding{
				h.config("pip/pip.conf").bind(RO), h.home(".pip/pip.conf").bind(RO), h.config("uv/uv.toml").bind(RO),
				pyenvRoot(h).bind(RO), uvPythonDir(h).bind(RO), uvToolDir(h).bind(RO),
				pipxHome(h).bind(RO), h.home(".local/pipx").bind(RO),
			}
			if p, ok := h.usable(h.Env["PIP_CONFIG_FILE"]); ok {
				bs = append(bs, p.bind(RO))
			}
			return h.withExecutables(bs, "uv", "pipx", "python3")
		},
		Env: []string{"PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "PIP_CONFIG_FILE",
			"PIP_REQUIRE_VIRTUALENV", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX",
			"UV_PYTHON", "UV_PYTHON_PREFERENCE", "UV_PYTHON_INSTALL_DIR", "UV_TOOL_DIR", "PYENV_ROOT",
			"PIPX_HOME", "PIPX_BIN_DIR"},
		Egress: []string{"pypi.org", "files.pythonhosted.org", "github.com",
			"objects.githubusercontent.com", "release-assets.githubusercontent.com"},
	}
}

func pyenvRoot(h Host) place { return h.envPlace("PYENV_ROOT", h.home(".pyenv")) }

// uvPythonDir holds uv's managed interpreters; a venv's bin/python links into it.
func uvPythonDir(h Host) place {
	return h.envPlace("UV_PYTHON_INSTALL_DIR", h.data("uv/python"))
}

// uvToolDir holds `uv tool install` environments (~/.local/bin links into them).
func uvToolDir(h Host) place { return h.envPlace("UV_TOOL_DIR", h.data("uv/tools")) }

// pipxHome holds pipx's virtualenvs (~/.local/pipx, before pipx 1.3, is bound too).
func pipxHome(h Host) place { return h.envPlace("PIPX_HOME", h.data("pipx")) }
