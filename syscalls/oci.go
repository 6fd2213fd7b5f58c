package syscalls

import (
	"encoding/json"

	spec "github.com/opencontainers/runtime-spec/specs-go"
)

// OCI renders rs as a seccomp profile in the runtime-spec's form, which the docker
// engine takes in HostConfig.SecurityOpt ("seccomp=" and the JSON) and podman from a
// file (SeccompProfilePath). It lists amd64 and arm64 so one profile fits an engine
// of either; other ABIs (i386, x32, arm32) are not listed, so the runtime kills a
// process making their calls, as BPF's program does.
//
// In a profile the rules for one call are alternatives, each a conjunction of
// conditions on distinct arguments, and an unconditional rule overrides conditional
// ones (runc with libseccomp 2.5, as shipped with Docker 20.10). So an AllowIf rule
// becomes one allowing rule per match, and a DenyIf rule becomes allowing rules that
// cover every value of the argument but the refused ones. Calls no rule allows get
// the default action, EPERM; those the policy calls Absent are listed with ENOSYS,
// as the engines ignore defaultErrnoRet (Docker 20.10).
func OCI(rs Rules) *spec.LinuxSeccomp {
	p := &spec.LinuxSeccomp{
		DefaultAction: spec.ActErrno,
		Architectures: []spec.Arch{spec.ArchX86_64, spec.ArchAARCH64},
	}
	eperm, enosys := uint(errnoEPERM), uint(errnoENOSYS)
	var allow, deny, absent []string
	var cond []spec.LinuxSyscall
	for _, r := range rs {
		switch r.Action {
		case Allow:
			allow = append(allow, r.Name)
		case Deny:
			deny = append(deny, r.Name)
		case Absent:
			absent = append(absent, r.Name)
		case AllowIf:
			for _, m := range r.AllowIf {
				sc := spec.LinuxSyscall{Names: []string{r.Name}, Action: spec.ActAllow}
				for _, c := range m {
					sc.Args = append(sc.Args, spec.LinuxSeccompArg{Index: uint(c.Arg), Value: c.Mask, ValueTwo: c.Value, Op: spec.OpMaskedEqual})
				}
				cond = append(cond, sc)
			}
		case DenyIf:
			cond = append(cond, coverRules(r)...)
		}
	}
	p.Syscalls = append(p.Syscalls, spec.LinuxSyscall{Names: allow, Action: spec.ActAllow})
	p.Syscalls = append(p.Syscalls, cond...)
	p.Syscalls = append(p.Syscalls,
		spec.LinuxSyscall{Names: deny, Action: spec.ActErrno, ErrnoRet: &eperm},
		spec.LinuxSyscall{Names: absent, Action: spec.ActErrno, ErrnoRet: &enosys},
	)
	return p
}

// OCIJSON is OCI as JSON, the form the engines take.
func OCIJSON(rs Rules) []byte {
	b, _ := json.Marshal(OCI(rs))
	return b
}

// Profile returns p's profile as OCIJSON renders it. The strict policy's is rendered
// ahead of time (zstrict.go, kept equal to OCIJSON's output by a test): a fresh
// process rendering it spends 1–2 ms (the rules, encoding/json's first use of the
// profile's types), on a docker run's critical path; a relaxed policy pays it.
func Profile(p Policy) []byte {
	if len(p.Relax) == 0 {
		return []byte(strictOCI)
	}
	return OCIJSON(Compile(p))
}

// coverRules returns allowing rules for r (Action DenyIf) whose conditions cover every
// value of the compared argument's low 32 bits except the refused ones: the prefixes
// of a binary trie that contain no refused value. The high bits are not compared, as
// the kernel ignores them. Every condition of r compares the same argument (a test
// holds the rules to it).
func coverRules(r Rule) []spec.LinuxSyscall {
	var refused []uint32
	for _, c := range r.DenyIf {
		refused = append(refused, uint32(c.Value))
	}
	var out []spec.LinuxSyscall
	for _, pre := range cover(refused) {
		out = append(out, spec.LinuxSyscall{Names: []string{r.Name}, Action: spec.ActAllow,
			Args: []spec.LinuxSeccompArg{{Index: uint(r.DenyIf[0].Arg), Value: uint64(pre.mask), ValueTwo: uint64(pre.value), Op: spec.OpMaskedEqual}}})
	}
	return out
}

// prefix is the set of 32-bit values v with v&mask == value, mask being a run of
// leading ones.
type prefix struct{ mask, value uint32 }

// cover returns prefixes that together hold every 32-bit value except those in
// excluded, and none of those.
func cover(excluded []uint32) []prefix {
	var out []prefix
	var walk func(value uint32, length int, pts []uint32)
	walk = func(value uint32, length int, pts []uint32) {
		if len(pts) == 0 {
			var mask uint32
			if length > 0 {
				mask = ^uint32(0) << (32 - length)
			}
			out = append(out, prefix{mask, value})
			return
		}
		if length == 32 {
			return // an excluded value itself
		}
		bit := uint32(1) << (31 - length)
		var zero, one []uint32
		for _, p := range pts {
			if p&bit == 0 {
				zero = append(zero, p)
			} else {
				one = append(one, p)
			}
		}
		walk(value, length+1, zero)
		walk(value|bit, length+1, one)
	}
	walk(0, 0, dedupe(excluded))
	return out
}

func dedupe(v []uint32) []uint32 {
	seen := map[uint32]bool{}
	var out []uint32
	for _, x := range v {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
