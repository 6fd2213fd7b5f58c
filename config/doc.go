// Package config loads the devsandbox configuration: built-in defaults, the user file
// ($XDG_CONFIG_HOME/devsandbox/config.toml), the trusted project file
// (<project>/.devsandbox.toml), an explicit --config file (which replaces the user
// file), the DEVSANDBOX_ISOLATOR variable and command-line flags, merged in that order
// into one validated Config.
//
// Decoding is strict: an unknown key, a value of the wrong type or a bad value is an
// *Error naming the file, the line and the dotted key. Later layers win for scalars;
// lists are unioned in order without duplicates, so a later layer can add entries but
// never remove one; tables (env.set, secrets.files, tools) merge key by key.
//
// A project file applies only while its content is the one the user trusted (Trust,
// CheckTrust; records in $XDG_CONFIG_HOME/devsandbox/trusted.toml), and it may only
// tighten the sandbox: keys that expose more of the host are refused and protections
// may not be loosened (see checkProject).
//
// Show, ShowJSON and StarterFile render the schema for `config show` and
// `config init`.
//
// This package is the only place that reads the process environment: Host carries the
// snapshot everything downstream uses.
package config
