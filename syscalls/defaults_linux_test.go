package syscalls

import (
	"slices"
	"testing"

	common "github.com/containers/common/pkg/seccomp"
	moby "github.com/moby/profiles/seccomp"
)

// runtimeRule is one rule of a container runtime's default profile, as it applies to
// a process without capabilities on one architecture.
type runtimeRule struct {
	names []string
	allow bool
	args  []runtimeArg
}

type runtimeArg struct {
	index           int
	value, valueTwo uint64
	op              string
}

func (a runtimeArg) holds(args [6]uint64) bool {
	v := args[a.index]
	switch a.op {
	case "SCMP_CMP_EQ":
		return v == a.value
	case "SCMP_CMP_NE":
		return v != a.value
	case "SCMP_CMP_LT":
		return v < a.value
	case "SCMP_CMP_LE":
		return v <= a.value
	case "SCMP_CMP_GT":
		return v > a.value
	case "SCMP_CMP_GE":
		return v >= a.value
	case "SCMP_CMP_MASKED_EQ":
		return v&a.value == a.valueTwo
	}
	panic("unknown operator " + a.op)
}

// runtimeAllows reports whether a runtime's rules allow name with args: an allowing
// rule matches and no refusing one does.
func runtimeAllows(rules []runtimeRule, name string, args [6]uint64) bool {
	allowed := false
	for _, r := range rules {
		if !slices.Contains(r.names, name) {
			continue
		}
		match := true
		for _, a := range r.args {
			if !a.holds(args) {
				match = false
			}
		}
		if !match {
			continue
		}
		if !r.allow {
			return false
		}
		allowed = true
	}
	return allowed
}

// applies reports whether a rule with these filters applies to a process without
// capabilities on arch.
func applies(inclCaps, inclArches, exclArches []string, arch Arch) bool {
	if len(inclCaps) > 0 {
		return false
	}
	if len(inclArches) > 0 && !slices.Contains(inclArches, string(arch)) {
		return false
	}
	return !slices.Contains(exclArches, string(arch))
}

func dockerRules(arch Arch) []runtimeRule {
	var out []runtimeRule
	for _, s := range moby.DefaultProfile().Syscalls {
		var ic, ia, ea []string
		if s.Includes != nil {
			ic, ia = s.Includes.Caps, s.Includes.Arches
		}
		if s.Excludes != nil {
			ea = s.Excludes.Arches
		}
		if !applies(ic, ia, ea, arch) {
			continue
		}
		r := runtimeRule{names: s.Names, allow: s.Action == "SCMP_ACT_ALLOW"}
		for _, a := range s.Args {
			r.args = append(r.args, runtimeArg{int(a.Index), a.Value, a.ValueTwo, string(a.Op)})
		}
		out = append(out, r)
	}
	return out
}

func podmanRules(arch Arch) []runtimeRule {
	var out []runtimeRule
	for _, s := range common.DefaultProfile().Syscalls {
		if !applies(s.Includes.Caps, s.Includes.Arches, s.Excludes.Arches, arch) {
			continue
		}
		r := runtimeRule{names: s.Names, allow: s.Action == common.ActAllow}
		for _, a := range s.Args {
			r.args = append(r.args, runtimeArg{int(a.Index), a.Value, a.ValueTwo, string(a.Op)})
		}
		out = append(out, r)
	}
	return out
}

// TestAtLeastTheRuntimeDefaults: whatever the strict policy allows, the default
// profiles of Docker (moby/profiles) and podman (containers/common) allow a process
// without capabilities too, on every supported architecture. So the policy refuses
// at least what they refuse.
func TestAtLeastTheRuntimeDefaults(t *testing.T) {
	rs := Compile(Policy{})
	for _, arch := range Arches {
		for name, rules := range map[string][]runtimeRule{"docker": dockerRules(arch), "podman": podmanRules(arch)} {
			if len(rules) < 10 {
				t.Fatalf("%s's default profile has %d rules for %s: the comparison would be vacuous", name, len(rules), arch)
			}
			for _, r := range rs {
				if _, ok := number(arch, r.Name); !ok {
					continue
				}
				for _, args := range samples(r) {
					if r.allows(args) && !runtimeAllows(rules, r.Name, args) {
						t.Errorf("%s: the policy allows %s%#x, which %s's default profile refuses", arch, r.Name, args[:3], name)
					}
				}
			}
		}
	}
	// The comparison has teeth: both refuse what they should.
	for _, arch := range Arches {
		for name, rules := range map[string][]runtimeRule{"docker": dockerRules(arch), "podman": podmanRules(arch)} {
			if runtimeAllows(rules, "bpf", [6]uint64{}) || !runtimeAllows(rules, "read", [6]uint64{}) {
				t.Errorf("%s's rules for %s do not read as expected", name, arch)
			}
		}
	}
}
