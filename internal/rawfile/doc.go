// Package rawfile reads a whole file at once with the system calls themselves, for
// the files a launch reads once (see ReadFile).
package rawfile
