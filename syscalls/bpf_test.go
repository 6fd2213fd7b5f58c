package syscalls

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// run interprets p (the subset of classic BPF the renderer emits) on a seccomp_data.
func run(t *testing.T, p Program, arch uint32, nr uint32, args [6]uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[0:], nr)
	binary.LittleEndian.PutUint32(data[4:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(p); pc++ {
		in := p[pc]
		switch in.Code {
		case bpfLdAbs:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case bpfAndK:
			acc &= in.K
		case bpfJa:
			pc += int(in.K)
		case bpfJeqK, bpfJgeK, bpfJsetK:
			var cond bool
			switch in.Code {
			case bpfJeqK:
				cond = acc == in.K
			case bpfJgeK:
				cond = acc >= in.K
			default:
				cond = acc&in.K != 0
			}
			if cond {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case bpfRetK:
			return in.K
		default:
			t.Fatalf("pc %d: unknown opcode %#x", pc, in.Code)
		}
	}
	t.Fatalf("the program ran off its end (nr %d)", nr)
	return 0
}

// TestBPFMatchesRules interprets the program for every call of every architecture
// and checks its verdict against the rules, for both the strict and the relaxed
// policy: the binary search and its long jumps send each number where it belongs.
func TestBPFMatchesRules(t *testing.T) {
	for _, pol := range []Policy{{}, allRelaxed(t)} {
		rs := Compile(pol)
		for _, arch := range Arches {
			p, err := BPF(rs, arch)
			if err != nil {
				t.Fatal(err)
			}
			_, audit := calls(arch)
			if got := run(t, p, 0x40000003, 39, [6]uint64{}); got != retKillProcess {
				t.Errorf("%s: a call of another ABI: %s, want KILL_PROCESS", arch, retName(got))
			}
			var maxNr uint32
			for _, r := range rs {
				nr, ok := number(arch, r.Name)
				if !ok {
					continue
				}
				maxNr = max(maxNr, nr)
				got := run(t, p, audit, nr, [6]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)})
				want := map[Action]uint32{Allow: retAllow, Deny: retErrno | errnoEPERM, Absent: retErrno | errnoENOSYS}[r.Action]
				switch r.Action {
				case AllowIf:
					want = evalAllowIf(r, [6]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)})
				case DenyIf:
					want = retAllow
				}
				if got != want {
					t.Errorf("%s %s: %s (%d): %s, want %s", pol, arch, r.Name, nr, retName(got), retName(want))
				}
			}
			for _, nr := range []uint32{maxNr + 1, 1000, 0x40000000 | 39, ^uint32(0)} {
				if got := run(t, p, audit, nr, [6]uint64{}); got != retErrno|errnoENOSYS {
					t.Errorf("%s %s: unknown number %#x: %s, want ENOSYS", pol, arch, nr, retName(got))
				}
			}
		}
	}
}

// evalAllowIf is the meaning of an AllowIf rule, straight from the model.
func evalAllowIf(r Rule, args [6]uint64) uint32 {
	for _, m := range r.AllowIf {
		ok := true
		for _, c := range m {
			if args[c.Arg]&c.Mask != c.Value {
				ok = false
			}
		}
		if ok {
			return retAllow
		}
	}
	return retErrno | errnoEPERM
}

// TestBPFArguments checks the argument blocks on the values that matter, high bits
// included (the kernel truncates int arguments; a filter that compares 64 bits is
// bypassed by setting them, CVE-2019-10063).
func TestBPFArguments(t *testing.T) {
	rs := Compile(Policy{})
	const eperm, allow = retErrno | errnoEPERM, uint32(retAllow)
	for _, arch := range Arches {
		p, err := BPF(rs, arch)
		if err != nil {
			t.Fatal(err)
		}
		_, audit := calls(arch)
		for _, c := range []struct {
			name string
			args [6]uint64
			want uint32
		}{
			{"ioctl", [6]uint64{0, 0x5413}, allow}, // TIOCGWINSZ
			{"ioctl", [6]uint64{0, tiocSTI}, eperm},
			{"ioctl", [6]uint64{0, 1<<32 | tiocSTI}, eperm},
			{"ioctl", [6]uint64{0, tiocLINUX}, eperm},
			{"ioctl", [6]uint64{0, 0xffffffff00000000 | tiocSETD}, eperm},
			{"ioctl", [6]uint64{tiocSTI, 0x5401}, allow}, // TCGETS, with the number in another argument
			{"clone", [6]uint64{0x01200011}, allow},      // fork: CLONE_CHILD_SETTID|CLONE_CHILD_CLEARTID|SIGCHLD
			{"clone", [6]uint64{0x003d0f00}, allow},      // a pthread
			{"clone", [6]uint64{cloneNewUser}, eperm},
			{"clone", [6]uint64{cloneNewNet | 0x11}, eperm},
			{"clone", [6]uint64{1<<32 | cloneNewNS}, eperm},
			{"socket", [6]uint64{afUnix, 1}, allow},
			{"socket", [6]uint64{afInet6, 2}, allow},
			{"socket", [6]uint64{afNetlink, 3, netlinkRoute}, allow},
			{"socket", [6]uint64{afNetlink, 3, netlinkSockDiag}, allow},
			{"socket", [6]uint64{afNetlink, 3, 12}, eperm}, // NETLINK_NETFILTER
			{"socket", [6]uint64{17, 3}, eperm},            // AF_PACKET
			{"socket", [6]uint64{40, 1}, eperm},            // AF_VSOCK
			{"socket", [6]uint64{1<<32 | 17, 3}, eperm},
			{"socketpair", [6]uint64{afUnix, 1}, allow},
			{"socketpair", [6]uint64{30, 1}, eperm}, // AF_TIPC
			{"personality", [6]uint64{0xffffffff}, allow},
			{"personality", [6]uint64{0x0040000}, eperm}, // ADDR_NO_RANDOMIZE
		} {
			nr, ok := number(arch, c.name)
			if !ok {
				t.Fatalf("%s has no %s", arch, c.name)
			}
			if got := run(t, p, audit, nr, c.args); got != c.want {
				t.Errorf("%s %s%#x: %s, want %s", arch, c.name, c.args[:3], retName(got), retName(c.want))
			}
		}
	}
}

func TestBPFGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		pol  Policy
		arch Arch
	}{
		{"strict.amd64", Policy{}, AMD64},
		{"strict.arm64", Policy{}, ARM64},
		{"relaxed.amd64", allRelaxed(t), AMD64},
	} {
		got, err := Disassemble(Compile(c.pol), c.arch)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, c.name+".bpf", fmt.Sprintf("# %s, %s\n%s", c.pol, c.arch, got))
	}
}

func TestProgramBytes(t *testing.T) {
	p := Program{{Code: 0x15, Jt: 1, Jf: 2, K: 0xc000003e}}
	want := []byte{0x15, 0x00, 0x01, 0x02, 0x3e, 0x00, 0x00, 0xc0}
	if got := p.Bytes(); string(got) != string(want) {
		t.Errorf("Bytes = % x, want % x", got, want)
	}
}

func BenchmarkCompileBPF(b *testing.B) {
	for range b.N {
		if _, err := BPF(Compile(Policy{}), AMD64); err != nil {
			b.Fatal(err)
		}
	}
}

// TestStrictPrograms keeps zstrict.go, the strict policy's programs and OCI profile
// rendered ahead of time, equal to what BPF and OCIJSON render now (go test -update
// rewrites it).
func TestStrictPrograms(t *testing.T) {
	var b strings.Builder
	b.WriteString("// Code generated by go test -run TestStrictPrograms -update; DO NOT EDIT.\n\npackage syscalls\n")
	for _, arch := range Arches {
		p, err := BPF(Compile(Policy{}), arch)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "\n// strict%s is the strict policy's program for %s (Program.Bytes).\nconst strict%s = ", strings.ToUpper(string(arch)), arch, strings.ToUpper(string(arch)))
		raw := p.Bytes()
		for i := 0; i < len(raw); i += 32 {
			if i > 0 {
				b.WriteString(" +\n\t")
			}
			b.WriteByte('"')
			for _, c := range raw[i:min(i+32, len(raw))] {
				fmt.Fprintf(&b, "\\x%02x", c)
			}
			b.WriteByte('"')
		}
		b.WriteString("\n")
		got, err := Seccomp(Policy{}, arch)
		if err != nil {
			t.Fatal(err)
		}
		if !*update && string(got) != string(raw) {
			t.Errorf("zstrict.go's %s program is stale: run go test ./syscalls -run TestStrictPrograms -update", arch)
		}
	}
	raw := OCIJSON(Compile(Policy{}))
	b.WriteString("\n// strictOCI is the strict policy's OCI profile (OCIJSON).\nconst strictOCI = ")
	for i := 0; i < len(raw); i += 96 {
		if i > 0 {
			b.WriteString(" +\n\t")
		}
		b.WriteString(strconv.Quote(string(raw[i:min(i+96, len(raw))])))
	}
	b.WriteString("\n")
	if !*update && string(Profile(Policy{})) != string(raw) {
		t.Errorf("zstrict.go's OCI profile is stale: run go test ./syscalls -run TestStrictPrograms -update")
	}
	if *update {
		if err := os.WriteFile("zstrict.go", []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
