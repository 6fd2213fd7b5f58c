package syscalls

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	spec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestOCIGolden(t *testing.T) {
	for name, pol := range map[string]Policy{"strict": {}, "relaxed": allRelaxed(t)} {
		b, err := json.MarshalIndent(OCI(Compile(pol)), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		golden(t, name+".oci.json", string(b)+"\n")
	}
}

// ociAllows evaluates a profile as runc does with libseccomp: the call is allowed when
// one of its allowing rules matches; rules are alternatives, conditions conjunctions.
func ociAllows(p *spec.LinuxSeccomp, name string, args [6]uint64) bool {
	for _, s := range p.Syscalls {
		if s.Action != spec.ActAllow || !slices.Contains(s.Names, name) {
			continue
		}
		ok := true
		for _, a := range s.Args {
			if a.Op != spec.OpMaskedEqual {
				panic("unexpected operator " + a.Op)
			}
			if args[a.Index]&a.Value != a.ValueTwo {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// TestOCIMatchesRules: the profile allows exactly what the rules allow, on the
// arguments that matter and on random ones.
func TestOCIMatchesRules(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, pol := range []Policy{{}, allRelaxed(t)} {
		rs := Compile(pol)
		p := OCI(rs)
		for _, r := range rs {
			vectors := samples(r)
			for range 200 {
				var a [6]uint64
				for i := range a {
					a[i] = rnd.Uint64() >> rnd.IntN(64)
				}
				vectors = append(vectors, a)
			}
			for _, args := range vectors {
				if got, want := ociAllows(p, r.Name, args), r.allows(args); got != want {
					t.Errorf("%s: %s%#x: profile allows=%v, rules allow=%v", pol, r.Name, args[:3], got, want)
				}
			}
			// Refusals carry the errno the rules give.
			var errno uint
			switch r.Action {
			case Deny:
				errno = errnoEPERM
			case Absent:
				errno = errnoENOSYS
			default:
				continue
			}
			found := false
			for _, s := range p.Syscalls {
				if slices.Contains(s.Names, r.Name) {
					found = s.Action == spec.ActErrno && s.ErrnoRet != nil && *s.ErrnoRet == errno
				}
			}
			if !found {
				t.Errorf("%s: %s is not refused with errno %d", pol, r.Name, errno)
			}
		}
	}
}

// TestCover: the prefixes hold every value but the excluded ones, each once.
func TestCover(t *testing.T) {
	excluded := []uint32{tiocSTI, tiocLINUX, tiocSETD, tiocSTI}
	ps := cover(excluded)
	count := func(v uint32) int {
		n := 0
		for _, p := range ps {
			if v&p.mask == p.value {
				n++
			}
		}
		return n
	}
	for _, v := range excluded {
		if n := count(v); n != 0 {
			t.Errorf("%#x is covered %d times", v, n)
		}
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	for _, v := range append([]uint32{0, ^uint32(0), tiocSTI - 1, tiocSTI + 1, tiocLINUX + 1, tiocSETD - 1, 0x5401}, func() []uint32 {
		var out []uint32
		for range 10000 {
			out = append(out, rnd.Uint32())
		}
		return out
	}()...) {
		if slices.Contains(excluded, v) {
			continue
		}
		if n := count(v); n != 1 {
			t.Errorf("%#x is covered %d times, want once", v, n)
		}
	}
	if len(ps) > 64 {
		t.Errorf("%d prefixes for 3 values", len(ps))
	}
	if got := cover(nil); len(got) != 1 || got[0].mask != 0 {
		t.Errorf("cover(nil) = %v, want everything", got)
	}
}

// samples are argument vectors on which to compare a rule with a runtime's: those
// its conditions name, and some others.
func samples(r Rule) [][6]uint64 {
	out := [][6]uint64{{}, {^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}, {0x5401, 0x5401}, {17, 3, 0}, {40, 1}}
	for _, m := range r.AllowIf {
		var a [6]uint64
		for _, c := range m {
			a[c.Arg] = c.Value
		}
		out = append(out, a)
	}
	for _, c := range r.DenyIf {
		var a [6]uint64
		a[c.Arg] = c.Value
		out = append(out, a)
	}
	return out
}

// allows is the rule's verdict on args.
func (r Rule) allows(args [6]uint64) bool {
	switch r.Action {
	case Allow:
		return true
	case AllowIf:
		return evalAllowIf(r, args) == retAllow
	case DenyIf:
		for _, c := range r.DenyIf {
			if args[c.Arg]&c.Mask == c.Value {
				return false
			}
		}
		return true
	}
	return false
}
