package tty

import (
	"bytes"
	"strings"
	"testing"
)

// benchOutputs are what a command writes to its terminal: plain text, a
// full-screen program's redraws (cursor moves, colours, UTF-8 box drawing), and
// text holding sequences the filter drops.
func benchOutputs() map[string][]byte {
	var tui bytes.Buffer
	for i := range 2000 {
		tui.WriteString("\x1b[" + strings.Repeat("1", i%3+1) + ";1H\x1b[38;2;200;100;50m│ \x1b[1mfile.go\x1b[m  modified  ✓ done — 3 tests\x1b[K\r\n")
	}
	var hostile bytes.Buffer
	for range 2000 {
		hostile.WriteString("text \x1b]52;c;ZWNobyBwd25lZAo=\x07 more \x1b[21t\x1bPtmux;\x1b\x1b]52;c;eA==\x07\x1b\\ and \x1b]0;title\x07\r\n")
	}
	return map[string][]byte{
		"text":    bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog 0123456789\r\n"), 2000),
		"tui":     tui.Bytes(),
		"hostile": hostile.Bytes(),
	}
}

// BenchmarkFilter measures the filter's throughput (bytes/s) on 32 KiB reads,
// the relay's buffer size; BenchmarkCopy is the copy it adds to.
func BenchmarkFilter(b *testing.B) {
	for name, in := range benchOutputs() {
		b.Run(name, func(b *testing.B) {
			f := NewFilter(FilterOptions{})
			out := make([]byte, 0, 32*1024)
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				for p := in; len(p) > 0; {
					n := min(len(p), 32*1024)
					out = f.Append(out[:0], p[:n])
					p = p[n:]
				}
			}
		})
	}
}

func BenchmarkCopy(b *testing.B) {
	for name, in := range benchOutputs() {
		b.Run(name, func(b *testing.B) {
			out := make([]byte, 0, 32*1024)
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				for p := in; len(p) > 0; {
					n := min(len(p), 32*1024)
					out = append(out[:0], p[:n]...)
					p = p[n:]
				}
			}
		})
	}
}
