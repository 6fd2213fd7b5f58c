package syscalls

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// Instruction is one classic BPF instruction (the kernel's struct sock_filter).
type Instruction struct {
	Code   uint16
	Jt, Jf uint8
	K      uint32
}

// Program is a seccomp BPF program for one architecture.
type Program []Instruction

// Bytes returns the program as the kernel and bwrap's --seccomp read it: an array of
// struct sock_filter in the byte order of the supported architectures (little-endian).
func (p Program) Bytes() []byte {
	b := make([]byte, 0, 8*len(p))
	for _, in := range p {
		b = binary.LittleEndian.AppendUint16(b, in.Code)
		b = append(b, in.Jt, in.Jf)
		b = binary.LittleEndian.AppendUint32(b, in.K)
	}
	return b
}

// Classic BPF opcodes and seccomp's return values and data layout.
const (
	bpfLdAbs = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfAndK  = 0x54 // BPF_ALU | BPF_AND | BPF_K
	bpfJa    = 0x05 // BPF_JMP | BPF_JA
	bpfJeqK  = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfJgeK  = 0x35 // BPF_JMP | BPF_JGE | BPF_K
	bpfJsetK = 0x45 // BPF_JMP | BPF_JSET | BPF_K
	bpfRetK  = 0x06 // BPF_RET | BPF_K

	retKillProcess = 0x80000000
	retErrno       = 0x00050000
	retAllow       = 0x7fff0000

	errnoEPERM  = 1
	errnoENOSYS = 38

	offNr   = 0  // seccomp_data.nr
	offArch = 4  // seccomp_data.arch
	offArgs = 16 // seccomp_data.args[0]; each is 8 bytes, the low half first
)

// BPF renders rs as a seccomp program for arch. It checks the architecture first and
// kills a process making calls of another ABI (i386 or x32 binaries on amd64, arm32
// on arm64), whose numbers mean other calls; then it finds the call's number in a
// binary search over ranges of numbers with the same disposition, so a call costs a
// dozen instructions. Numbers the policy does not know (newer calls) fail with ENOSYS.
func BPF(rs Rules, arch Arch) (Program, error) {
	p, _, err := bpf(rs, arch)
	return p, err
}

// span is a range of system call numbers from lo to the next span's lo, with one
// disposition: a return value, or (block >= 0) a block checking the arguments.
type span struct {
	lo    uint32
	ret   uint32
	block int
}

// bpf is BPF, also returning the start of each argument block with its call's name
// (for Disassemble).
func bpf(rs Rules, arch Arch) (Program, map[int]string, error) {
	cs, audit := calls(arch)
	if cs == nil {
		return nil, nil, ErrArch{string(arch)}
	}
	var maxNr uint32
	for _, c := range cs {
		maxNr = max(maxNr, c.nr)
	}
	disp := make([]span, maxNr+1)
	for i := range disp {
		disp[i] = span{lo: uint32(i), ret: retErrno | errnoENOSYS, block: -1}
	}
	var blocks []Rule
	// rs and cs are both sorted by name: walk them together.
	j := 0
	for _, r := range rs {
		for j < len(cs) && cs[j].name < r.Name {
			j++
		}
		if j == len(cs) || cs[j].name != r.Name {
			continue
		}
		d := &disp[cs[j].nr]
		switch r.Action {
		case Allow:
			d.ret = retAllow
		case Deny:
			d.ret = retErrno | errnoEPERM
		case Absent:
			d.ret = retErrno | errnoENOSYS
		case AllowIf, DenyIf:
			d.block = len(blocks)
			blocks = append(blocks, r)
		default:
			return nil, nil, fmt.Errorf("system call %s: unknown action %d", r.Name, r.Action)
		}
	}
	// Adjacent numbers with the same disposition form one span; numbers above the
	// table's end fail with ENOSYS.
	var spans []span
	for _, d := range append(disp, span{lo: maxNr + 1, ret: retErrno | errnoENOSYS, block: -1}) {
		if n := len(spans); n > 0 && d.block < 0 && spans[n-1].block < 0 && spans[n-1].ret == d.ret {
			continue
		}
		spans = append(spans, d)
	}

	a := &assembler{}
	a.emit(Instruction{Code: bpfLdAbs, K: offArch})
	a.emit(Instruction{Code: bpfJeqK, K: audit, Jt: 1})
	a.emit(Instruction{Code: bpfRetK, K: retKillProcess})
	a.emit(Instruction{Code: bpfLdAbs, K: offNr})
	a.tree(spans)
	labels := map[int]string{}
	starts := make([]int, len(blocks))
	for i, r := range blocks {
		starts[i] = len(a.prog)
		labels[starts[i]] = r.Name
		if err := a.block(r); err != nil {
			return nil, nil, err
		}
	}
	for _, f := range a.fixups {
		a.prog[f.at].K = uint32(starts[f.block] - f.at - 1)
	}
	if len(a.prog) > 4096 {
		return nil, nil, fmt.Errorf("the seccomp program has %d instructions, more than the kernel's 4096", len(a.prog))
	}
	return a.prog, labels, nil
}

type assembler struct {
	prog   Program
	fixups []struct{ at, block int } // jumps to the start of an argument block
}

func (a *assembler) emit(in ...Instruction) { a.prog = append(a.prog, in...) }

// tree emits a binary search over spans (the call number is in the accumulator):
// the left half falls through, the right half is reached by a jump over it.
func (a *assembler) tree(spans []span) {
	if len(spans) == 1 {
		s := spans[0]
		if s.block >= 0 {
			a.fixups = append(a.fixups, struct{ at, block int }{len(a.prog), s.block})
			a.emit(Instruction{Code: bpfJa})
			return
		}
		a.emit(Instruction{Code: bpfRetK, K: s.ret})
		return
	}
	mid := len(spans) / 2
	left := treeSize(spans[:mid])
	if left <= 255 {
		a.emit(Instruction{Code: bpfJgeK, K: spans[mid].lo, Jt: uint8(left)})
	} else {
		// A conditional jump reaches 255 instructions; farther, through a jump.
		a.emit(Instruction{Code: bpfJgeK, K: spans[mid].lo, Jf: 1}, Instruction{Code: bpfJa, K: uint32(left)})
	}
	a.tree(spans[:mid])
	a.tree(spans[mid:])
}

// treeSize is the number of instructions tree emits for spans.
func treeSize(spans []span) int {
	if len(spans) == 1 {
		return 1
	}
	mid := len(spans) / 2
	left := treeSize(spans[:mid])
	n := 1
	if left > 255 {
		n = 2
	}
	return n + left + treeSize(spans[mid:])
}

// block emits the argument checks of a conditional rule.
func (a *assembler) block(r Rule) error {
	switch r.Action {
	case AllowIf:
		for _, m := range r.AllowIf {
			var body Program
			var fails []int // instructions whose false branch leaves the match
			for _, c := range m {
				ins, fail := condition(c)
				for _, f := range fail {
					fails = append(fails, len(body)+f)
				}
				body = append(body, ins...)
			}
			body = append(body, Instruction{Code: bpfRetK, K: retAllow})
			for _, f := range fails {
				d := len(body) - f - 1
				if d > 255 {
					return fmt.Errorf("system call %s: argument match too long", r.Name)
				}
				if body[f].Code == bpfJsetK {
					body[f].Jt = uint8(d)
				} else {
					body[f].Jf = uint8(d)
				}
			}
			a.emit(body...)
		}
		a.emit(Instruction{Code: bpfRetK, K: retErrno | errnoEPERM})
	case DenyIf:
		var body Program
		var hits []int
		loaded := -1
		for _, c := range r.DenyIf {
			if c.Mask != lo32 {
				return fmt.Errorf("system call %s: a refusing condition must compare the low 32 bits", r.Name)
			}
			if c.Arg != loaded {
				body = append(body, Instruction{Code: bpfLdAbs, K: uint32(offArgs + 8*c.Arg)})
				loaded = c.Arg
			}
			hits = append(hits, len(body))
			body = append(body, Instruction{Code: bpfJeqK, K: uint32(c.Value)})
		}
		body = append(body, Instruction{Code: bpfRetK, K: retAllow})
		for _, h := range hits {
			body[h].Jt = uint8(len(body) - h - 1)
		}
		a.emit(body...)
		a.emit(Instruction{Code: bpfRetK, K: retErrno | errnoEPERM})
	default:
		return fmt.Errorf("system call %s: action %s has no argument block", r.Name, r.Action)
	}
	return nil
}

// condition returns the instructions testing c, and the indexes of those whose
// failing branch must leave the match (set by the caller).
func condition(c Cond) (Program, []int) {
	var p Program
	var fails []int
	for half, off := range []uint32{0, 4} {
		mask, val := uint32(c.Mask>>(32*half)), uint32(c.Value>>(32*half))
		if mask == 0 {
			continue
		}
		p = append(p, Instruction{Code: bpfLdAbs, K: uint32(offArgs+8*c.Arg) + off})
		fails = append(fails, len(p))
		switch {
		case val == 0 && mask != 0xffffffff:
			// No bit of the mask may be set: one test.
			p = append(p, Instruction{Code: bpfJsetK, K: mask})
		case mask == 0xffffffff:
			p = append(p, Instruction{Code: bpfJeqK, K: val})
		default:
			fails[len(fails)-1]++
			p = append(p, Instruction{Code: bpfAndK, K: mask}, Instruction{Code: bpfJeqK, K: val})
		}
	}
	return p, fails
}

// Disassemble renders a program for people (and golden files): one instruction a
// line, jumps with absolute targets, call numbers and argument blocks named.
func Disassemble(rs Rules, arch Arch) (string, error) {
	p, labels, err := bpf(rs, arch)
	if err != nil {
		return "", err
	}
	names := map[uint32]string{}
	cs, _ := calls(arch)
	for _, c := range cs {
		names[c.nr] = c.name
	}
	var b strings.Builder
	for i, in := range p {
		if l, ok := labels[i]; ok {
			fmt.Fprintf(&b, "; %s\n", l)
		}
		fmt.Fprintf(&b, "%04d  %s\n", i, instruction(in, i, names))
	}
	return b.String(), nil
}

func instruction(in Instruction, pc int, names map[uint32]string) string {
	to := func(off uint8) int { return pc + 1 + int(off) }
	switch in.Code {
	case bpfLdAbs:
		switch {
		case in.K == offNr:
			return "ld nr"
		case in.K == offArch:
			return "ld arch"
		case in.K >= offArgs && (in.K-offArgs)%8 == 0:
			return fmt.Sprintf("ld arg%d.lo", (in.K-offArgs)/8)
		case in.K >= offArgs:
			return fmt.Sprintf("ld arg%d.hi", (in.K-offArgs)/8)
		}
		return fmt.Sprintf("ld [%d]", in.K)
	case bpfAndK:
		return fmt.Sprintf("and #%#x", in.K)
	case bpfJa:
		return fmt.Sprintf("ja %04d", pc+1+int(in.K))
	case bpfJgeK:
		n := ""
		if name, ok := names[in.K]; ok {
			n = " (" + name + ")"
		}
		return fmt.Sprintf("jge #%d%s, %04d, %04d", in.K, n, to(in.Jt), to(in.Jf))
	case bpfJeqK:
		return fmt.Sprintf("jeq #%#x, %04d, %04d", in.K, to(in.Jt), to(in.Jf))
	case bpfJsetK:
		return fmt.Sprintf("jset #%#x, %04d, %04d", in.K, to(in.Jt), to(in.Jf))
	case bpfRetK:
		return "ret " + retName(in.K)
	}
	return fmt.Sprintf("%#04x %d %d %#x", in.Code, in.Jt, in.Jf, in.K)
}

func retName(k uint32) string {
	switch {
	case k == retAllow:
		return "ALLOW"
	case k == retKillProcess:
		return "KILL_PROCESS"
	case k == retErrno|errnoEPERM:
		return "ERRNO(EPERM)"
	case k == retErrno|errnoENOSYS:
		return "ERRNO(ENOSYS)"
	}
	return fmt.Sprintf("%#x", k)
}

// Seccomp returns the seccomp program of p for arch as bwrap reads it (Program.Bytes).
// The strict policy's programs are rendered ahead of time (zstrict.go, kept equal to
// BPF's output by a test): rendering costs a few hundred microseconds at launch,
// most of it first touches of memory, which every launch of a relaxed policy pays.
func Seccomp(p Policy, arch Arch) ([]byte, error) {
	if len(p.Relax) == 0 {
		switch arch {
		case AMD64:
			return []byte(strictAMD64), nil
		case ARM64:
			return []byte(strictARM64), nil
		}
	}
	prog, err := BPF(Compile(p), arch)
	if err != nil {
		return nil, err
	}
	return prog.Bytes(), nil
}
