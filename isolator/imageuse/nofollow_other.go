//go:build !unix

package imageuse

const syscallNoFollow = 0
