package tty

import (
	"bytes"
	"slices"
	"strconv"
)

// screenGuard follows the escape sequences a sandboxed command writes to the user's
// terminal, so that at the end of the run the relay can put back what the command
// left behind in the terminal emulator, which outlives it (the kernel's terminal
// mode the relay restores exactly; these live in the emulator, beyond termios):
//
//   - modes it turned on and did not turn off (the alternate screen, mouse reporting,
//     bracketed paste, application cursor keys and keypad, focus events, a hidden
//     cursor, the kitty keyboard protocol, modifyOtherKeys, text attributes):
//     resets returns the sequences that turn exactly those off again, and nothing
//     for a command that cleaned up after itself;
//   - queries whose answers the terminal may still be sending (a cursor position,
//     a colour, a window title report): whether it sent any (queried), and how many
//     primary device attribute queries (da1), which the relay's settling counts.
//
// It only reads the stream; the relay writes it to the user's terminal unchanged.
// Not safe for concurrent use: the output copy owns it until the copy ends.
type screenGuard struct {
	st      parseState
	prefix  byte   // a CSI's private prefix ('?', '>', '<', '='), 0 when none
	params  []byte // a CSI's parameter bytes after the prefix
	inter   []byte // a CSI's intermediate bytes
	strKind byte   // the string sequence being skipped: ']' (OSC), 'P' (DCS), '_', '^', 'X'
	strQ    bool   // the OSC being skipped holds '?': a query
	strEsc  bool   // an ESC seen inside a string: ST (ESC \) may follow

	modes     map[int]bool // DEC private modes left away from their default
	keypad    bool         // application keypad (ESC =)
	kittyKeys int          // kitty keyboard protocol levels pushed and not popped
	otherKeys bool         // xterm modifyOtherKeys set
	sgr       bool         // text attributes set and not reset

	queried bool // a sequence that makes the terminal answer was written
	da1     int  // primary device attribute queries (CSI c) written
}

type parseState uint8

const (
	ground parseState = iota
	escape
	csi
	str
)

// decDefaults are the DEC private modes the guard resets, with the value a terminal
// starts with (true: set). Modes others than these are left as they are.
var decDefaults = map[int]bool{
	1:    false, // application cursor keys
	7:    true,  // autowrap
	25:   true,  // cursor visible
	47:   false, // alternate screen
	1047: false, // alternate screen
	1049: false, // alternate screen, saving the cursor
	1000: false, // mouse: clicks
	1001: false, // mouse: highlight tracking
	1002: false, // mouse: drags
	1003: false, // mouse: all motion
	1004: false, // focus in and out events
	1005: false, // mouse: UTF-8 coordinates
	1006: false, // mouse: SGR coordinates
	1015: false, // mouse: urxvt coordinates
	1016: false, // mouse: SGR pixel coordinates
	2004: false, // bracketed paste
	2026: false, // synchronized output
}

// observe follows p, the next bytes of the command's output.
func (g *screenGuard) observe(p []byte) {
	for _, b := range p {
		g.step(b)
	}
}

func (g *screenGuard) step(b byte) {
	switch g.st {
	case ground:
		switch b {
		case 0x1b:
			g.st = escape
		case 0x05: // ENQ: the terminal sends its answerback message
			g.queried = true
		}
	case escape:
		g.st = ground
		switch b {
		case '[':
			g.st, g.prefix, g.params, g.inter = csi, 0, g.params[:0], g.inter[:0]
		case ']', 'P', '_', '^', 'X':
			// OSC, DCS, APC, PM, SOS: strings. A DCS (DECRQSS, XTGETTCAP) or an APC
			// (kitty graphics) may be a query; an OSC is one when it holds '?'.
			g.st, g.strKind, g.strQ, g.strEsc = str, b, false, false
			if b != ']' {
				g.queried = true
			}
		case '=':
			g.keypad = true
		case '>':
			g.keypad = false
		case 'Z': // DECID
			g.queried = true
		case 'c': // RIS: the terminal resets itself
			g.reset()
		case 0x1b:
			g.st = escape
		}
	case csi:
		switch {
		case b >= 0x30 && b <= 0x3f:
			if len(g.params) == 0 && g.prefix == 0 && (b == '?' || b == '>' || b == '<' || b == '=') {
				g.prefix = b
			} else {
				g.params = append(g.params, b)
			}
		case b >= 0x20 && b <= 0x2f:
			g.inter = append(g.inter, b)
		case b >= 0x40 && b <= 0x7e:
			g.st = ground
			g.csiFinal(b)
		case b == 0x1b:
			g.st = escape
		case b == 0x18 || b == 0x1a: // CAN, SUB abort the sequence
			g.st = ground
		}
	case str:
		switch {
		case b == 0x07 && g.strKind == ']': // BEL ends an OSC
			g.endString()
		case g.strEsc && b == '\\':
			g.endString()
		case g.strEsc:
			// An ESC ends the string, as in terminals (the VT500 parser), and
			// begins the next sequence: this byte is that sequence's.
			g.endString()
			g.st = escape
			g.step(b)
		case b == 0x18 || b == 0x1a:
			g.st = ground
		default:
			g.strEsc = b == 0x1b
			if b == '?' {
				g.strQ = true
			}
		}
	}
}

func (g *screenGuard) endString() {
	g.st = ground
	if g.strKind == ']' && g.strQ {
		g.queried = true
	}
}

// csiFinal acts on a complete CSI sequence ending in final.
func (g *screenGuard) csiFinal(final byte) {
	args := g.args()
	switch {
	case g.prefix == '?' && len(g.inter) == 0 && (final == 'h' || final == 'l'):
		for _, n := range args {
			if def, ok := decDefaults[n]; ok {
				if (final == 'h') == def {
					delete(g.modes, n)
				} else {
					if g.modes == nil {
						g.modes = map[int]bool{}
					}
					g.modes[n] = final == 'h'
				}
			}
		}
	case g.prefix == '>' && final == 'u': // kitty keyboard: push
		g.kittyKeys++
	case g.prefix == '<' && final == 'u': // kitty keyboard: pop n levels
		n := 1
		if len(args) > 0 && args[0] > 0 {
			n = args[0]
		}
		g.kittyKeys = max(0, g.kittyKeys-n)
	case g.prefix == '>' && final == 'm' && len(args) > 0 && args[0] == 4: // modifyOtherKeys
		g.otherKeys = len(args) > 1 && args[1] > 0
	case g.prefix == 0 && len(g.inter) == 0 && final == 'm':
		g.sgr = len(args) > 0 && slices.ContainsFunc(args, func(n int) bool { return n != 0 }) && args[len(args)-1] != 0
	case g.prefix == 0 && len(g.inter) == 1 && g.inter[0] == '!' && final == 'p': // DECSTR: soft reset
		g.reset()
	}
	// Queries: device attributes and status reports, window reports, the terminal's
	// parameters, mode requests (DECRQM, with '$'), and the kitty keyboard, xterm
	// version, graphics and key-modifier queries.
	switch {
	case final == 'c' || final == 'n' || final == 't' || final == 'x':
		g.queried = true
		if final == 'c' && g.prefix == 0 && len(g.inter) == 0 && (len(args) == 0 || args[0] == 0) {
			g.da1++
		}
	case bytes.IndexByte(g.inter, '$') >= 0 && final == 'p':
		g.queried = true
	case g.prefix == '?' && (final == 'u' || final == 'S' || final == 'm'):
		g.queried = true
	case g.prefix == '>' && final == 'q':
		g.queried = true
	}
}

// args parses the CSI's parameters: numbers separated by ';' (':' sub-parameters
// are dropped; an empty or malformed one is 0).
func (g *screenGuard) args() []int {
	if len(g.params) == 0 {
		return nil
	}
	var out []int
	for _, f := range bytes.Split(g.params, []byte{';'}) {
		if i := bytes.IndexByte(f, ':'); i >= 0 {
			f = f[:i]
		}
		n, err := strconv.Atoi(string(f))
		if err != nil || n < 0 {
			n = 0
		}
		out = append(out, n)
	}
	return out
}

// reset forgets the modes: the terminal put them back itself (RIS, DECSTR).
func (g *screenGuard) reset() {
	g.modes, g.keypad, g.kittyKeys, g.otherKeys, g.sgr = nil, false, 0, false, false
}

// resets returns the sequences that put back what the command left changed, in an
// order that leaves the alternate screen first (so the rest applies to the main
// screen the user returns to); nil when it left nothing.
func (g *screenGuard) resets() []byte {
	var b []byte
	for _, n := range []int{1049, 1047, 47} {
		if _, ok := g.modes[n]; ok {
			b = append(b, "\x1b[?"+strconv.Itoa(n)+"l"...)
		}
	}
	var rest []int
	for n := range g.modes {
		if n != 1049 && n != 1047 && n != 47 {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	for _, n := range rest {
		set := "l"
		if decDefaults[n] {
			set = "h"
		}
		b = append(b, "\x1b[?"+strconv.Itoa(n)+set...)
	}
	if g.keypad {
		b = append(b, "\x1b>"...)
	}
	if g.kittyKeys > 0 {
		b = append(b, "\x1b[<"+strconv.Itoa(g.kittyKeys)+"u"...)
	}
	if g.otherKeys {
		b = append(b, "\x1b[>4m"...)
	}
	if g.sgr {
		b = append(b, "\x1b[m"...)
	}
	return b
}

// da1Answers counts the primary device attribute answers (ESC [ ? ... c) in a
// terminal's input, across reads.
type da1Answers struct {
	st uint8 // 0 ground, 1 ESC, 2 ESC [, 3 ESC [ ? ...
	n  int
}

func (d *da1Answers) observe(p []byte) {
	for _, b := range p {
		switch {
		case b == 0x1b:
			d.st = 1
		case d.st == 1 && b == '[':
			d.st = 2
		case d.st == 2 && b == '?':
			d.st = 3
		case d.st == 3 && (b >= '0' && b <= '9' || b == ';'):
		case d.st == 3 && b == 'c':
			d.n++
			d.st = 0
		default:
			d.st = 0
		}
	}
}
