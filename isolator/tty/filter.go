package tty

// Filter removes from a sandboxed command's output the escape sequences that make
// the user's terminal emulator act beyond its screen: write the host clipboard,
// type text of the command's choosing into the terminal's input (which is the host
// shell's once the command ends), write or read host files, or reach a terminal
// further out. What full-screen programs need passes unchanged: text, colours,
// cursor movement, modes (alternate screen, mouse, bracketed paste, focus, the
// kitty keyboard protocol), titles, colour queries, hyperlinks and notifications.
//
// Dropped by default (docs/security-model.md gives the reasons):
//
//   - DCS, APC, PM and SOS strings, whole: DECRQSS and XTGETTCAP answers, the tmux
//     and screen passthrough to the outer terminal, kitty graphics (which can read
//     host files), sixel;
//   - every OSC but an allowed list: titles (0, 1, 2), colours and their queries
//     (4, 5, 10-19, 104, 105, 110-119), hyperlinks (8), notifications (9, 99, 777),
//     prompt marks (133) and the pointer shape (22). So the clipboard (52), the
//     current directory (7), iTerm2's commands (1337: file downloads, RemoteHost),
//     kitty's file transfer (5113) and clipboard (5522), fonts (50) and log files
//     (46) are dropped;
//   - the window title and icon reports, CSI 20 t and CSI 21 t.
//
// With AllowClipboard, OSC 52 writes pass; its query (a payload starting with '?',
// which would send the host clipboard to the command) never does.
//
// The filter is a stream parser: a sequence split across writes is decided when it
// is complete, holding at most maxHeld bytes; a string (OSC, DCS) of any length is
// decided on its first bytes and then passed or dropped as it arrives. Sequences
// are recognised in their 7-bit (ESC [), 8-bit C1 (0x9b) and UTF-8 encoded C1
// (0xc2 0x9b) forms; a C1 byte that continues a UTF-8 character is text. Where
// terminals differ on where a string ends (ESC, CAN, SUB, a C1 control, ST), the
// filter ends it at the first of these and parses what follows afresh, so what a
// terminal could read as a new sequence has always been through the filter.
//
// Not safe for concurrent use.
type Filter struct {
	opts FilterOptions
	st   filterState
	held []byte // the sequence being decided; nil when none
	// over counts the bytes of a CSI or an OSC command number beyond maxHeld: such a
	// sequence is dropped.
	over bool
	// A UTF-8 character in progress: the continuation bytes still expected, and a
	// 0xc2 lead held back until the next byte says whether it encodes a C1 control.
	need    int
	pendC2  bool
	strEsc  bool // an ESC seen inside a string: ST (ESC \) may follow
	dropped int  // sequences removed so far (for tests)
}

// FilterOptions are what a user allows beyond the default (sandbox.terminal_clipboard).
type FilterOptions struct {
	// AllowClipboard passes OSC 52 clipboard writes (never its query).
	AllowClipboard bool
}

type filterState uint8

const (
	fGround       filterState = iota
	fEscape                   // after ESC (held)
	fEscInter                 // ESC and intermediates, passing
	fCSI                      // collecting a CSI in held
	fOSCNum                   // collecting an OSC's command number in held
	fOSC52                    // collecting an allowed OSC 52's selection in held
	fOSC52Payload             // OSC 52 held up to its payload, whose first byte decides
	fStrPass                  // inside an allowed OSC: passing
	fStrDrop                  // inside a dropped string
)

// maxHeld bounds the bytes held for a CSI (the longest real ones, true-colour SGR
// sequences, are about 40) or for an OSC's command number and OSC 52's selection.
const maxHeld = 256

// NewFilter returns a filter for one command's output.
func NewFilter(opts FilterOptions) *Filter {
	return &Filter{opts: opts, held: make([]byte, 0, 64)}
}

// Append appends to dst what of p may reach the terminal, and returns the extended
// slice. Bytes of a sequence not yet complete are held for the next call.
func (f *Filter) Append(dst, p []byte) []byte {
	for i := 0; i < len(p); i++ {
		if f.need == 0 && !f.pendC2 {
			switch f.st {
			case fGround:
				// Text: copy the run of whole characters at once.
				j := textRun(p, i)
				dst = append(dst, p[i:j]...)
				if i = j; i == len(p) {
					return dst
				}
				// A whole 7-bit CSI in p: decide it in place.
				if j, ok := csiRun(p, i); ok {
					if dropCSI(p[i:j], p[j]) {
						f.dropped++
					} else {
						dst = append(dst, p[i:j+1]...)
					}
					i = j
					continue
				}
			case fCSI:
				// Parameters and intermediates: hold the run at once.
				j := i
				for j < len(p) && p[j] >= 0x20 && p[j] <= 0x3f {
					j++
				}
				room := maxHeld - len(f.held)
				f.held = append(f.held, p[i:i+min(j-i, room)]...)
				f.over = f.over || j-i > room
				if i = j; i == len(p) {
					return dst
				}
			}
		}
		dst = f.byte(dst, p[i])
	}
	return dst
}

// csiRun reports whether p[i:] starts with a whole 7-bit CSI no longer than a held
// one may be, and returns the index of its final byte.
func csiRun(p []byte, i int) (int, bool) {
	if i+1 >= len(p) || p[i] != 0x1b || p[i+1] != '[' {
		return 0, false
	}
	j := i + 2
	for j < len(p) && p[j] >= 0x20 && p[j] <= 0x3f {
		j++
	}
	if j == len(p) || p[j] < 0x40 || p[j] > 0x7e || j-i > maxHeld {
		return 0, false
	}
	return j, true
}

// textRun returns the end of the run of text starting at p[i]: ASCII but ESC, and
// whole UTF-8 characters but the encoded C1 controls.
func textRun(p []byte, i int) int {
	for i < len(p) {
		c := p[i]
		if c < 0x80 {
			if c == 0x1b {
				return i
			}
			i++
			continue
		}
		n := 0
		switch {
		case c >= 0xc2 && c <= 0xdf:
			n = 2
		case c >= 0xe0 && c <= 0xef:
			n = 3
		case c >= 0xf0 && c <= 0xf4:
			n = 4
		default:
			return i
		}
		if i+n > len(p) || c == 0xc2 && p[i+1] < 0xa0 {
			return i
		}
		for k := 1; k < n; k++ {
			if p[i+k] < 0x80 || p[i+k] > 0xbf {
				return i
			}
		}
		i += n
	}
	return i
}

// Flush ends the stream: it appends to dst a UTF-8 lead byte held back and the
// end of a string being passed (so the terminal is not left inside it), and drops a
// sequence that was never completed. The filter starts afresh after it.
func (f *Filter) Flush(dst []byte) []byte {
	if f.pendC2 && (f.st == fGround || f.st == fStrPass) {
		dst = append(dst, 0xc2)
	}
	if f.st == fStrPass {
		dst = append(dst, 0x1b, '\\')
	}
	*f = Filter{opts: f.opts, held: f.held[:0]}
	return dst
}

// byte decodes b as UTF-8 enough to tell a C1 control from a character's
// continuation byte, and passes it on as text or as a C1 control.
func (f *Filter) byte(dst []byte, b byte) []byte {
	if f.pendC2 {
		f.pendC2 = false
		if b >= 0x80 && b <= 0x9f {
			return f.c1(dst, b, true)
		}
		dst = f.text(dst, 0xc2)
		if b >= 0xa0 && b <= 0xbf {
			return f.text(dst, b)
		}
	}
	if f.need > 0 && b >= 0x80 && b <= 0xbf {
		f.need--
		return f.text(dst, b)
	}
	f.need = 0
	switch {
	case b == 0xc2:
		f.pendC2 = true
		return dst
	case b >= 0xc3 && b <= 0xdf:
		f.need = 1
	case b >= 0xe0 && b <= 0xef:
		f.need = 2
	case b >= 0xf0 && b <= 0xf4:
		f.need = 3
	case b >= 0x80 && b <= 0x9f:
		return f.c1(dst, b, false)
	}
	return f.text(dst, b)
}

// c1 acts on the C1 control c, written as one byte or, when enc, as 0xc2 c.
func (f *Filter) c1(dst []byte, c byte, enc bool) []byte {
	f.strEsc = false
	switch f.st {
	case fStrPass:
		if c == 0x9c { // ST ends the string
			f.st = fGround
			return appendC1(dst, c, enc)
		}
	case fStrDrop:
		if c == 0x9c {
			f.st = fGround
			return dst
		}
	case fOSCNum:
		if c == 0x9c { // an OSC with no parameters, such as OSC 104 ST
			if dst = f.oscDecide(dst); f.st == fStrPass {
				dst = appendC1(dst, c, enc)
			}
			f.st = fGround
			return dst
		}
	}
	// Anywhere else a C1 control ends the sequence in progress (dropping what was
	// held, ending a string passed) and acts on its own.
	if f.st == fStrPass {
		dst = append(dst, 0x1b, '\\')
	}
	f.held, f.over = f.held[:0], false
	f.st = fGround
	switch c {
	case 0x9b: // CSI
		f.st, f.held = fCSI, appendC1(f.held, c, enc)
	case 0x9d: // OSC
		f.st, f.held = fOSCNum, appendC1(f.held, c, enc)
	case 0x90, 0x98, 0x9e, 0x9f: // DCS, SOS, PM, APC
		f.dropString()
	case 0x9c: // a stray ST
	default:
		dst = appendC1(dst, c, enc)
	}
	return dst
}

func appendC1(dst []byte, c byte, enc bool) []byte {
	if enc {
		dst = append(dst, 0xc2)
	}
	return append(dst, c)
}

// text acts on b, a byte that is not a C1 control.
func (f *Filter) text(dst []byte, b byte) []byte {
	switch f.st {
	case fGround:
		if b == 0x1b {
			f.st, f.held = fEscape, append(f.held[:0], b)
			return dst
		}
		return append(dst, b)
	case fEscape:
		return f.escape(dst, b)
	case fEscInter:
		switch {
		case b == 0x1b:
			f.st, f.held = fEscape, append(f.held[:0], b)
			return dst
		case b >= 0x30 && b <= 0x7e, b == 0x18, b == 0x1a, b >= 0x80:
			f.st = fGround
		}
		return append(dst, b)
	case fCSI:
		return f.csi(dst, b)
	case fOSCNum, fOSC52, fOSC52Payload:
		return f.oscHead(dst, b)
	case fStrPass, fStrDrop:
		return f.str(dst, b)
	}
	return dst
}

func (f *Filter) escape(dst []byte, b byte) []byte {
	f.st = fGround
	switch {
	case b == '[':
		f.st, f.held = fCSI, append(f.held, b)
	case b == ']':
		f.st, f.held = fOSCNum, append(f.held, b)
	case b == 'P' || b == 'X' || b == '^' || b == '_':
		f.dropString()
	case b == 0x1b: // the first ESC is abandoned
		f.st = fEscape
	case b == '\\': // a stray ST
		f.held = f.held[:0]
	case b >= 0x20 && b <= 0x2f: // intermediates: ESC ( B and the like
		dst = append(append(dst, f.held...), b)
		f.st, f.held = fEscInter, f.held[:0]
	case b == 0x18 || b == 0x1a: // CAN, SUB: the sequence is cancelled
		f.held = f.held[:0]
		dst = append(dst, b)
	case b < 0x20 || b == 0x7f:
		// Terminals execute a C0 control (and ignore DEL) met after ESC and go on
		// with the sequence: so does the filter, or ESC CR ] would pass as text
		// and reach the terminal as an OSC.
		f.st = fEscape
		dst = append(dst, b)
	case b >= 0x80: // not a sequence: the ESC is dropped, the byte is text
		f.held = f.held[:0]
		return f.text(dst, b)
	default:
		dst = append(append(dst, f.held...), b)
		f.held = f.held[:0]
	}
	return dst
}

func (f *Filter) csi(dst []byte, b byte) []byte {
	switch {
	case b >= 0x20 && b <= 0x3f: // parameters and intermediates
		if len(f.held) < maxHeld {
			f.held = append(f.held, b)
		} else {
			f.over = true
		}
		return dst
	case b >= 0x40 && b <= 0x7e:
		f.st = fGround
		if !f.over && !dropCSI(f.held, b) {
			dst = append(append(dst, f.held...), b)
		} else {
			f.dropped++
		}
		f.held, f.over = f.held[:0], false
		return dst
	case b == 0x1b:
		f.st, f.held, f.over = fEscape, append(f.held[:0], b), false
		return dst
	case b == 0x18 || b == 0x1a: // CAN, SUB: the sequence is cancelled
		f.st, f.held, f.over = fGround, f.held[:0], false
		return append(dst, b)
	case b < 0x20 || b == 0x7f:
		// Terminals execute a C0 control met inside a CSI and go on with the
		// sequence; passing it first changes nothing on the screen.
		return append(dst, b)
	}
	// A byte no CSI holds (0xa0 and up): drop the sequence, keep the byte.
	f.st, f.held, f.over = fGround, f.held[:0], false
	return f.text(dst, b)
}

// dropCSI reports whether the CSI seq (its introducer, parameters and
// intermediates) ending in final is one the terminal must not see: the window
// title and icon label reports, whose answer is text the command chose.
func dropCSI(seq []byte, final byte) bool {
	if final != 't' {
		return false
	}
	p := csiParams(seq)
	n := 0
	for _, c := range p {
		if c == ';' || c == ':' {
			break
		}
		if c < '0' || c > '9' {
			return false // a private or intermediate form: not a window op
		}
		n = n*10 + int(c-'0')
		if n > 1000 {
			return false
		}
	}
	return n == 20 || n == 21
}

// csiParams returns seq without its introducer (ESC [, 0x9b or 0xc2 0x9b).
func csiParams(seq []byte) []byte {
	switch {
	case len(seq) >= 2 && seq[0] == 0x1b:
		return seq[2:]
	case len(seq) >= 2 && seq[0] == 0xc2:
		return seq[2:]
	case len(seq) >= 1:
		return seq[1:]
	}
	return seq
}

// oscHead collects an OSC's command number (and, for an allowed OSC 52, its
// selection and the payload's first byte), then decides the string: passed from
// there on, or dropped.
func (f *Filter) oscHead(dst []byte, b byte) []byte {
	end := b == 0x07 || b == 0x1b || b == 0x18 || b == 0x1a
	switch {
	case f.st == fOSC52Payload:
		if b == '?' { // a query: the terminal would send the host clipboard
			f.dropString()
			return f.str(dst, b)
		}
		f.st, dst = fStrPass, append(dst, f.held...)
		f.held = f.held[:0]
		return f.str(dst, b)
	case end:
		if f.st == fOSC52 {
			f.dropString() // no payload: not a write
			return f.str(dst, b)
		}
		return f.str(f.oscDecide(dst), b)
	case b == ';' && f.st == fOSC52:
		f.st, f.held = fOSC52Payload, append(f.held, b)
		return dst
	case b == ';' && f.opts.AllowClipboard && oscNumber(f.held) == 52:
		f.st, f.held = fOSC52, append(f.held, b)
		return dst
	case b == ';':
		return f.str(f.oscDecide(dst), b)
	case len(f.held) >= maxHeld:
		f.dropString()
		return dst
	}
	f.held = append(f.held, b)
	return dst
}

// dropString starts dropping a string (its introducer was never passed on).
func (f *Filter) dropString() {
	f.st, f.held = fStrDrop, f.held[:0]
	f.dropped++
}

// oscDecide passes the OSC head held (emitting it) or drops it, by its number.
func (f *Filter) oscDecide(dst []byte) []byte {
	if allowedOSC(oscNumber(f.held)) {
		f.st, dst = fStrPass, append(dst, f.held...)
	} else {
		f.dropString()
	}
	f.held = f.held[:0]
	return dst
}

// allowedOSC reports whether OSC n passes: it changes what the screen shows
// or reports only values the terminal chose, never text the command chose.
func allowedOSC(n int) bool {
	switch {
	case n == 0 || n == 1 || n == 2: // icon and window titles
	case n == 4 || n == 5 || n >= 10 && n <= 19: // colours, and their queries
	case n == 104 || n == 105 || n >= 110 && n <= 119: // colour resets
	case n == 8: // hyperlinks
	case n == 9 || n == 99 || n == 777: // notifications
	case n == 22: // pointer shape
	case n == 133: // prompt marks
	default:
		return false
	}
	return true
}

// oscNumber returns the command number of the OSC head seq (its introducer and
// the bytes before the first ';'), -1 when it is not a number.
func oscNumber(seq []byte) int {
	p := csiParams(seq)
	if len(p) == 0 || len(p) > 6 {
		return -1
	}
	n := 0
	for _, c := range p {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// str acts on b inside an OSC being passed or a string being dropped.
func (f *Filter) str(dst []byte, b byte) []byte {
	pass := f.st == fStrPass
	if f.strEsc {
		f.strEsc = false
		if b == '\\' { // ST
			f.st = fGround
			if pass {
				dst = append(dst, 0x1b, b)
			}
			return dst
		}
		// ESC ends the string and begins a sequence of its own, which may be
		// dropped: end a passed string for the terminal too.
		if pass {
			dst = append(dst, 0x1b, '\\')
		}
		f.st = fGround
		return f.text(f.text(dst, 0x1b), b)
	}
	switch b {
	case 0x1b:
		f.strEsc = true
		return dst
	case 0x07, 0x18, 0x1a: // BEL ends an OSC; CAN and SUB cancel any string
		f.st = fGround
	}
	if pass {
		dst = append(dst, b)
	}
	return dst
}
