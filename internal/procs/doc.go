// Package procs reads the processes of this process's pid namespace from /proc and
// tells which of them an engine's exec started: what the pid 1 of a kept container
// (or of its companion) keeps free of processes that outlived their session.
package procs
