package config

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// starter is the file `devsandbox config init` writes. Every key appears commented
// out with its default (or, for a key without one, an example) under one line saying
// what it does; a test uncomments every line and validates the result.
const starter = `# devsandbox configuration. Every key is shown commented out with its default, or
# an example where it has none or its help line names the default; uncomment a line
# to change it. Reference: docs/configuration.md.
# Check this file with: devsandbox config validate FILE
#
# As ~/.config/devsandbox/config.toml (the user config) every key is allowed. As a
# project's .devsandbox.toml, keys marked [user config only] are refused, keys marked
# [stricter only] may only tighten the user's value, and the file applies only after
# you review it and run devsandbox config trust in the project.

# Isolator: auto (bwrap when installed, else docker), bwrap, docker or krun. [stricter only]
# isolator = "auto"

[sandbox]
# enforce (fail closed), auto (sandbox when usable, else warn) or off (no sandbox). [stricter only]
# mode = "enforce"
# dev or prod; prod turns mode "auto" into "enforce". [stricter only]
# environment = "dev"
# Project read-only except writable_dirs and .git (whose hooks and config stay read-only). [stricter only]
# read_only = false
# Project-relative directories that stay writable under read_only.
# writable_dirs = ["build"]
# Host paths shown empty inside; these entries are added to the defaults shown here.
# hide_paths = ["~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gcloud", "~/.azure", "~/.kube", "~/.docker", "~/.netrc"]
# File name globs masked empty anywhere in the project.
# mask_files = [".env", ".env.*"]
# File name globs exempt from mask_files. [user config only]
# mask_allow = [".env.example"]
# Directory names not scanned for masks. [user config only]
# mask_skip = [".git", "node_modules"]
# Host paths visible read-only at the same path. [user config only]
# ro_binds = ["~/src/shared"]
# Host paths visible read-write at the same path. [user config only]
# rw_binds = ["~/scratch"]
# Host mounts SRC:DST[:ro], ~ expanded. [user config only]
# host_mounts = ["~/data:/data:ro"]
# System paths: empty for the minimal view, ["host"] for all of / read-only, else the listed paths. [user config only]
# system_binds = []
# Session /tmp: session (private dir under the state dir), tmpfs or shm.
# tmp = "session"
# Size of a tmpfs /tmp (bwrap's with tmp = "tmpfs", docker's and krun's always), e.g. "1g";
# default: the kernel's, half the memory. [stricter only]
# tmp_size = ""
# Free space kept on each host file system the sandbox writes (project, sandbox home,
# session /tmp, writable binds): under it the run is refused or stopped (125); "0": none. [stricter only]
# disk_reserve = "1g"
# Use the host cache directory instead of a private one. [stricter only]
# bind_host_cache = false
# Expose the Docker socket and DOCKER_HOST inside. [stricter only]
# docker_socket = false
# Let the command write your clipboard through the terminal (OSC 52). [stricter only]
# terminal_clipboard = false
# Syscall policy groups to allow for this sandbox (strict by default): userns (nested
# sandboxes such as Chromium's), io_uring, perf (perf_event_open), sockets (every socket
# family). Each run says which are relaxed.
# relax_syscalls = ["io_uring"]
# bwrap: start bubblewrap from the record of the same command line's last launch while
# the configuration loads (on by default; DEVSANDBOX_EARLY_START=0 turns it off at no
# cost); false turns it off. [stricter only]
# early_start = true

[env]
# Host variable names (or prefixes such as "LC_*") passed in; values are never printed. [user config only]
# passthrough = ["EDITOR"]
# Pass the whole host environment, secrets included (warns). [stricter only]
# passthrough_all = false

[env.set]
# Variables set inside the sandbox: NAME = "value".
# EDITOR = "vim"

[secrets]
# Names whose host values are passed in as environment variables, never in argv. [user config only]
# env = ["GITHUB_TOKEN"]

[secrets.files]
# Host files delivered at /run/secrets/NAME (mode 0400): NAME = "path". [user config only]
# NPM_TOKEN = "~/.config/npm/token"

# Per tool: enabled (default: detected; a project file may only disable),
# secrets (pass the tool's declared secret names when set on the host) and
# key: "proxy" keeps the tool's API keys on the host, the proxy adds them toward
# the tool's API and the sandbox holds placeholders ("env", the default: passed in). [stricter only]
# [tools.claude]
# enabled = true
# secrets = true
# key = "proxy"

[egress]
# Network: open, none, proxy or allowlist (proxy and allowlist need the filtering proxy). [stricter only]
# mode = "proxy"
# Destinations allowed: host, *.domain, IP or CIDR, with an optional :port. [user config only]
# allow = ["github.com:443"]
# Destinations denied, same grammar.
# deny = ["169.254.169.254"]
# Published ports: the host's 127.0.0.1:HOST_PORT reaches the sandbox's SANDBOX_PORT.
# publish = ["3000:3000"]
# An allow entry of 0.0.0.0, ::, a loopback address or localhost is an error ("error"),
# or dropped with a warning ("ignore"); the proxy never reaches the host's loopback.
# loopback_entries = "error"

[proxy]
# What the proxy does with destinations no rule names: allow or deny. [stricter only]
# default = "allow"
# Decrypt HTTPS in the proxy (the sandbox trusts a per-project CA); default false;
# credentials for HTTPS hosts and git_push need it. [stricter only]
# mitm = true
# Refs a sandboxed git push may change: "agent/*" is refs/heads/agent/*, "refs/..." is
# taken as written (tags only when named). A push changing any other ref is refused
# whole at the proxy. Needs mitm = true and egress mode "proxy" (or "none"). A project
# file may set one where yours has none, never widen yours. [stricter only]
# git_push = ["agent/*"]
# While git_push is set, ssh on port 22 is refused (a push over ssh cannot be read)
# unless this is true. [stricter only]
# git_ssh = false

# Credentials the proxy adds to requests: host pattern, header, value_env or value_file,
# format, and placeholder_env (a variable set inside to a stand-in value). A host without
# a scheme goes over HTTPS only (port 443 unless named); write http://host:port for a
# credential sent over plain HTTP, in clear. [user config only]
# [[proxy.credentials]]
# host = "api.github.com"
# header = "Authorization"
# value_env = "GITHUB_TOKEN"
# format = "Bearer {}"
# placeholder_env = "GITHUB_TOKEN"
# [[proxy.credentials]]
# host = "registry.npmjs.org"
# header = "Authorization"
# value_file = "~/.config/npm/token"
# format = "Bearer {}"

[docker]
# Image for the docker isolator.
# image = "devsandbox/default:{version}"
# Engine address, unix:///PATH or tcp://HOST:PORT (not ssh://: forward the socket with ssh -L);
# empty: DOCKER_HOST, else the current docker context, else the default socket. [user config only]
# host = "unix:///var/run/docker.sock"
# Home directory inside the container.
# home = "/home/<user>"
# Keep one container per project and exec into it on later runs (refused with krun).
# keep_container = false
# On a local engine, bind the ssh agent relay's socket read-only into the container
# (proved per session; ~50 ms faster) instead of carrying the agent over the Engine API.
# A host socket in the container: a departure from DESIGN guarantee 11. [stricter only]
# agent_bind = false
# Deprecated: the same as limits.cpus and limits.memory (a warning says so). [stricter only]
# cpus = 2.0
# memory = "4g"

[krun]
# Image for the krun isolator; defaults to docker.image.
# image = "devsandbox/default:{version}"
# OCI runtime podman uses. [user config only]
# runtime = "krun"
# Virtual CPUs of the microVM (default: limits.cpus rounded up, else 2).
# cpus = 2
# Memory of the microVM in MiB (default: limits.memory, else 2048).
# memory_mib = 2048
# Podman API socket; discovered when empty. [user config only]
# podman_socket = "/run/user/1000/podman/podman.sock"

[limits]
# Tasks (processes and threads) per sandbox; 0 for no limit. [stricter only]
# pids = 4096
# Memory such as "4g" (no limit when unset); where it cannot be enforced the run fails. [stricter only]
# memory = "4g"
# CPUs (no limit when unset); where it cannot be enforced the run fails. [stricter only]
# cpus = 2.0
`

// StarterFile returns the commented starter configuration `devsandbox config init`
// writes: every key commented out with its default and a line saying what it does.
// It is valid as it is, and with every line uncommented.
func StarterFile() []byte {
	return []byte(strings.ReplaceAll(starter, "{version}", Version))
}

// WriteStarter writes StarterFile to path, creating its directory (0700) when
// missing. It never overwrites: when path exists the error matches fs.ErrExist.
func WriteStarter(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return &Error{File: path, Err: err}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if os.IsExist(err) {
			return &Error{File: path, Err: fmt.Errorf("not overwriting it: %w; edit it (`devsandbox config validate %s` checks it), or move it aside to write a new starter", fs.ErrExist, path)}
		}
		return &Error{File: path, Err: err}
	}
	_, err = f.Write(StarterFile())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path) // not a half-written config
		return &Error{File: path, Err: err}
	}
	return nil
}
