// Package landlock asks the kernel which Landlock ABI it has and applies the one
// Landlock rule devsandbox uses: scoping a process to the abstract Unix sockets made
// inside its own domain (Linux 6.12). Linux only; elsewhere it is empty.
package landlock
