package tty

import (
	"bytes"
	"strings"
	"testing"
)

func TestFilter(t *testing.T) {
	clip := FilterOptions{AllowClipboard: true}
	tests := []struct {
		name string
		opts FilterOptions
		in   string
		want string
	}{
		{"text", FilterOptions{}, "hello, world\r\n", "hello, world\r\n"},
		{"utf-8 text with C1-valued continuation bytes", FilterOptions{}, "“é—”\u0080x", "“é—”\u0080x"},
		{"colours and cursor", FilterOptions{}, "\x1b[1;38;2;255;0;0mred\x1b[m\x1b[10;20H\x1b[2J\x1b[?25l", "\x1b[1;38;2;255;0;0mred\x1b[m\x1b[10;20H\x1b[2J\x1b[?25l"},
		{"modes agents use", FilterOptions{}, "\x1b[?1049h\x1b[?1000h\x1b[?1006h\x1b[?2004h\x1b[?1004h\x1b[>1u\x1b[?2026h\x1b=", "\x1b[?1049h\x1b[?1000h\x1b[?1006h\x1b[?2004h\x1b[?1004h\x1b[>1u\x1b[?2026h\x1b="},
		{"queries with fixed answers", FilterOptions{}, "\x1b[c\x1b[6n\x1b[?u\x1b[?2004$p\x1b[18t\x1b]11;?\x07", "\x1b[c\x1b[6n\x1b[?u\x1b[?2004$p\x1b[18t\x1b]11;?\x07"},
		{"charset designation", FilterOptions{}, "\x1b(B\x1b)0x\x1b(]", "\x1b(B\x1b)0x\x1b(]"},
		{"titles", FilterOptions{}, "\x1b]0;a title\x07\x1b]2;ünï\x1b\\\x1b[22;0t\x1b[23;0t", "\x1b]0;a title\x07\x1b]2;ünï\x1b\\\x1b[22;0t\x1b[23;0t"},
		{"hyperlink", FilterOptions{}, "\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\", "\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\"},
		{"notifications and marks", FilterOptions{}, "\x1b]9;done\x07\x1b]777;notify;a;b\x07\x1b]133;A\x07", "\x1b]9;done\x07\x1b]777;notify;a;b\x07\x1b]133;A\x07"},
		{"colour reset without parameters", FilterOptions{}, "\x1b]104\x07\x1b]110\x1b\\", "\x1b]104\x07\x1b]110\x1b\\"},

		{"clipboard write", FilterOptions{}, "a\x1b]52;c;ZWNobyBwd25lZAo=\x07b", "ab"},
		{"clipboard write, ST", FilterOptions{}, "a\x1b]52;c;ZWNobyBwd25lZAo=\x1b\\b", "ab"},
		{"clipboard write, 8-bit", FilterOptions{}, "a\x9d52;c;ZWNobyBwd25lZAo=\x9cb", "ab"},
		{"clipboard write, UTF-8 encoded C1", FilterOptions{}, "a\u009d52;c;ZWNobyBwd25lZAo=\u009cb", "ab"},
		{"clipboard write, 8-bit OSC and 7-bit ST", FilterOptions{}, "a\x9d52;c;ZWNo\x1b\\b", "ab"},
		{"clipboard write allowed", clip, "a\x1b]52;c;ZWNo\x07b", "a\x1b]52;c;ZWNo\x07b"},
		{"clipboard write allowed, 8-bit", clip, "a\x9d52;;ZWNo\x9cb", "a\x9d52;;ZWNo\x9cb"},
		{"clipboard query", clip, "a\x1b]52;c;?\x07b", "ab"},
		{"clipboard query, default", FilterOptions{}, "a\x1b]52;c;?\x07b", "ab"},
		{"clipboard without payload", clip, "a\x1b]52;c\x07b", "ab"},
		{"kitty clipboard", FilterOptions{}, "a\x1b]5522;type=write\x07b", "ab"},
		{"current directory", FilterOptions{}, "a\x1b]7;file:///etc\x07b", "ab"},
		{"iTerm2 download", FilterOptions{}, "a\x1b]1337;File=name=eA==;inline=0:AAAA\x07b", "ab"},
		{"iTerm2 remote host", FilterOptions{}, "a\x1b]1337;RemoteHost=u@h\x07b", "ab"},
		{"kitty file transfer", FilterOptions{}, "a\x1b]5113;ac=send;id=1\x1b\\b", "ab"},
		{"font query", FilterOptions{}, "a\x1b]50;?\x07b", "ab"},
		{"OSC without a number", FilterOptions{}, "a\x1b];x\x07b\x1b]L\x07", "ab"},
		{"OSC with a long number", FilterOptions{}, "a\x1b]0000000000;x\x07b", "ab"},

		{"title report", FilterOptions{}, "a\x1b[21tb", "ab"},
		{"icon label report", FilterOptions{}, "a\x1b[20tb", "ab"},
		{"title report, 8-bit", FilterOptions{}, "a\x9b21tb", "ab"},
		{"title report, UTF-8 encoded C1", FilterOptions{}, "a\u009b21tb", "ab"},
		{"title report with a parameter", FilterOptions{}, "a\x1b[21;0tb", "ab"},
		{"CSI 8-bit passes", FilterOptions{}, "\x9b1m", "\x9b1m"},
		{"over-long CSI", FilterOptions{}, "a\x1b[" + strings.Repeat("1;", 200) + "mb", "ab"},

		{"DECRQSS", FilterOptions{}, "a\x1bP$qm\x1b\\b", "ab"},
		{"DECRQSS, 8-bit", FilterOptions{}, "a\x90$qm\x9cb", "ab"},
		{"XTGETTCAP", FilterOptions{}, "a\x1bP+q544e\x1b\\b", "ab"},
		{"tmux passthrough", FilterOptions{}, "a\x1bPtmux;\x1b\x1b]52;c;ZWNo\x07\x1b\\b", "ab"},
		{"kitty graphics from a file", FilterOptions{}, "a\x1b_Ga=T,t=f;L2V0Yy9wYXNzd2Q=\x1b\\b", "ab"},
		{"PM and SOS", FilterOptions{}, "a\x1b^x\x1b\\\x1bXy\x1b\\\x9ez\x9c\x98w\x9cb", "ab"},

		{"ESC ends a passed OSC and what follows is filtered", FilterOptions{}, "\x1b]0;t\x1b]52;c;ZWNo\x07b", "\x1b]0;t\x1b\\b"},
		{"C1 ends a passed OSC", FilterOptions{}, "\x1b]0;t\x9d52;c;ZWNo\x07b", "\x1b]0;t\x1b\\b"},
		{"CAN cancels a dropped string", FilterOptions{}, "\x1bPq#0\x18b", "b"},
		{"CAN cancels a CSI", FilterOptions{}, "\x1b[21\x18b", "\x18b"},
		{"ESC restarts inside a CSI", FilterOptions{}, "\x1b[2\x1b[21tb", "b"},
		{"C0 inside a CSI", FilterOptions{}, "\x1b[1\r2m", "\r\x1b[12m"},
		{"ESC ESC", FilterOptions{}, "\x1b\x1b[1m", "\x1b[1m"},
		{"C0 after ESC", FilterOptions{}, "\x1b\r]52;c;eA==\x07b\x1b\x7f[21tc", "\rb\x7fc"},
		{"C0 after ESC, kept", FilterOptions{}, "\x1b\r[1m", "\r\x1b[1m"},
		{"C0 after ESC and an intermediate", FilterOptions{}, "\x1b(\rB", "\x1b(\rB"},
		{"ESC before a UTF-8 character", FilterOptions{}, "\x1bé", "é"},
		{"stray ST", FilterOptions{}, "a\x9cb\x1b\\c", "abc"},
		{"other C1 passes", FilterOptions{}, "a\x85b\u0085c", "a\x85b\u0085c"},
		{"a string's body after the end is text", FilterOptions{}, "\x1b]52\x07;c;x", ";c;x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			// Whole, split in two at every position, and byte by byte: a sequence
			// split across reads is decided the same way.
			if got := NewFilter(tc.opts).Append(nil, in); string(got) != tc.want {
				t.Fatalf("whole: got %q, want %q", got, tc.want)
			}
			for i := 1; i < len(in); i++ {
				f := NewFilter(tc.opts)
				got := f.Append(f.Append(nil, in[:i]), in[i:])
				if string(got) != tc.want {
					t.Fatalf("split at %d: got %q, want %q", i, got, tc.want)
				}
			}
			f := NewFilter(tc.opts)
			var got []byte
			for i := range in {
				got = f.Append(got, in[i:i+1])
			}
			if string(got) != tc.want {
				t.Fatalf("byte by byte: got %q, want %q", got, tc.want)
			}
		})
	}
}

// An unterminated string is never buffered: the filter holds a bounded number of
// bytes whatever the command writes.
func TestFilterBounded(t *testing.T) {
	for _, head := range []string{"\x1b]52;c;", "\x1b]0;", "\x1bP", "\x1b]" + strings.Repeat("1", 1000), "\x1b[" + strings.Repeat("1", 1000)} {
		f := NewFilter(FilterOptions{AllowClipboard: true})
		f.Append(nil, []byte(head))
		chunk := bytes.Repeat([]byte("A"), 64*1024)
		for range 32 {
			f.Append(nil, chunk)
		}
		if cap(f.held) > 2*maxHeld {
			t.Errorf("%q: holding %d bytes", head[:4], cap(f.held))
		}
	}
}

// FuzzFilter checks what the table cannot enumerate: a stream is filtered the
// same whatever the reads' boundaries, and what the filter lets through holds
// nothing it removes (no removed sequence can be formed from what it kept).
func FuzzFilter(f *testing.F) {
	for _, s := range []string{"\x1b]52;c;eA==\x07", "\x9d52;c;eA==\x9c", "\u009d0;t\u009c", "\x1b[21t", "\x1bPtmux;\x1b\x1b]52;;x\x07\x1b\\", "“é”\x1b]2;ü\x1b\\"} {
		f.Add([]byte(s), uint(3), false)
	}
	f.Fuzz(func(t *testing.T, in []byte, at uint, clip bool) {
		opts := FilterOptions{AllowClipboard: clip}
		f := NewFilter(opts)
		whole := f.Flush(f.Append(nil, in))
		i := int(at % uint(len(in)+1))
		g := NewFilter(opts)
		if split := g.Flush(g.Append(g.Append(nil, in[:i]), in[i:])); !bytes.Equal(split, whole) {
			t.Fatalf("%q split at %d: %q, whole: %q", in, i, split, whole)
		}
		// What passed holds no sequence the filter removes. (It need not pass
		// again byte for byte: bytes on either side of a removed sequence may
		// join into a UTF-8 character, which hides a C1 control, never makes one.)
		h := NewFilter(opts)
		if again := h.Flush(h.Append(nil, whole)); h.dropped != 0 {
			t.Fatalf("%q: filtered %q, which holds %d sequences to remove (%q)", in, whole, h.dropped, again)
		}
	})
}

// The container backends' writer filters too, and Finish ends a title the command
// left open before anything else reaches the terminal.
func TestTidyFilters(t *testing.T) {
	var screen bytes.Buffer
	td := NewTidy(&screen, FilterOptions{})
	in := []byte("a\x1b]52;c;eA==\x07b\x1b[21t\x1b]0;open title")
	if n, err := td.Write(in); n != len(in) || err != nil {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(in))
	}
	if err := td.Finish(0); err != nil { // no query written: in is not read
		t.Fatal(err)
	}
	if got, want := screen.String(), "ab\x1b]0;open title\x1b\\"; got != want {
		t.Errorf("screen = %q, want %q", got, want)
	}
}

func TestWriterFilters(t *testing.T) {
	var screen bytes.Buffer
	w := NewWriter(&screen, FilterOptions{})
	in := []byte("a\x1b]52;c;eA==\x07b\x1b[21t\x1b]0;open title")
	if n, err := w.Write(in); n != len(in) || err != nil {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(in))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := screen.String(), "ab\x1b]0;open title\x1b\\"; got != want {
		t.Errorf("screen = %q, want %q", got, want)
	}
}
