// Package config loads the devsandbox configuration: built-in defaults, the user file
// ($XDG_CONFIG_HOME/devsandbox/config.toml), an explicit --config file, the
// DEVSANDBOX_ISOLATOR variable and command-line flags, merged in that order into one
// validated Config.
//
// Decoding is strict: an unknown key, a value of the wrong type or a bad value is an
// *Error naming the file, the line and the dotted key. Later layers win for scalars;
// lists are unioned in order without duplicates, so a later layer can add entries but
// never remove one; tables (env.set, secrets.files, tools) merge key by key.
//
// This package is the only place that reads the process environment: Host carries the
// snapshot everything downstream uses.
package config
