package tools

// Cargo exposes Rust installed with rustup read-only: CARGO_HOME's bin (cargo, the
// rustup proxies, `cargo install`ed tools), its env scripts (sourced by the shell rc
// files) and config, and RUSTUP_HOME (toolchains and settings). Installing a toolchain
// or a tool from inside the sandbox fails.
//
// CARGO_HOME's credentials(.toml) is never bound, and CARGO_REGISTRY_TOKEN (a publish
// token) is not declared. The registry and git caches are not bound: cargo writes them,
// and extracted crate sources are trusted without re-verification, so a writable host
// cache could be poisoned. The sandbox home keeps its own (in its CARGO_HOME when that
// lies under the home).
func Cargo() Tool {
	return Tool{
		Name:        "cargo",
		Description: "Rust: cargo bin, env and config, rustup toolchains (read-only); no credentials, no registry cache",
		Detect: func(h Host) bool {
			return h.onPath("cargo") || h.onPath("rustup") || h.exists(cargoHome(h).src) || h.exists(rustupHome(h).src)
		},
		Bindings: func(h Host) []Binding {
			ch := cargoHome(h)
			bs := []Binding{ch.join("bin").bind(RO)}
			for _, f := range []string{"env", "env.fish", "config.toml", "config"} {
				bs = append(bs, ch.join(f).bind(RO))
			}
			bs = append(bs, rustupHome(h).bind(RO))
			return h.withExecutables(bs, "cargo")
		},
		Env: []string{"CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "RUSTFLAGS", "RUSTDOCFLAGS",
			"CARGO_BUILD_JOBS", "CARGO_INCREMENTAL", "CARGO_NET_GIT_FETCH_WITH_CLI",
			"CARGO_REGISTRIES_CRATES_IO_PROTOCOL", "RUSTUP_DIST_SERVER", "RUSTUP_UPDATE_ROOT", "RUST_BACKTRACE"},
		Egress: []string{"crates.io", "index.crates.io", "static.crates.io", "static.rust-lang.org"},
	}
}

func cargoHome(h Host) place  { return h.envPlace("CARGO_HOME", h.home(".cargo")) }
func rustupHome(h Host) place { return h.envPlace("RUSTUP_HOME", h.home(".rustup")) }
