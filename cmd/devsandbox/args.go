package main

import "strings"

// valueFlags are the global flags that take a value (as the next word or after "="):
// every name of each flag of runFlags that takes one (a test holds the two together;
// a literal table keeps building the flags off the launch path).
var valueFlags = map[string]bool{
	"--isolator": true, "--mode": true, "--egress": true, "--allow": true, "-e": true, "--env": true,
	"--secret-file": true, "--mount": true, "--publish": true, "-p": true, "--image": true, "--config": true,
	"--pids": true, "--memory": true, "--cpus": true,
}

// subcommands are the words that name a devsandbox subcommand in command position:
// the names of app.commands and urfave/cli's help (a test holds them together).
var subcommands = map[string]bool{
	"doctor": true, "config": true, "tools": true, "logs": true, "version": true, "help": true,
	"sandboxes": true, "image": true,
}

// splitArgs splits argv (without the program name) into devsandbox's own flags, an
// optional subcommand with its arguments, and the command to sandbox. Flags stop at
// "--" or at the first word that is not a flag; that word is a subcommand only when it
// names one and no "--" came before it. urfave/cli never sees the command, so
// `devsandbox -- doctor` runs a program called doctor. A flag that takes a value never
// takes "--" for it (`--allow -- make`: the value was forgotten, which urfave/cli then
// reports, rather than a host named "--" refused and make left to run); `--allow=--`
// still gives it.
func splitArgs(args []string) (flags, sub, command []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return flags, nil, args[i+1:]
		case strings.HasPrefix(a, "-") && a != "-":
			flags = append(flags, a)
			if valueFlags[a] && i+1 < len(args) && args[i+1] != "--" {
				i++
				flags = append(flags, args[i])
			}
		case subcommands[a]:
			return flags, args[i:], nil
		default:
			return flags, nil, args[i:]
		}
	}
	return flags, nil, nil
}
