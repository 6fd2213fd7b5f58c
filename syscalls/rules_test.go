package syscalls

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current output")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s:\n%s", name, path, got)
	}
}

// allRelaxed relaxes every group.
func allRelaxed(t *testing.T) Policy {
	t.Helper()
	p, err := New(GroupNames())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPolicy(t *testing.T) {
	p, err := New([]string{"perf", "io_uring", "perf"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Group{IOURing, Perf}; !reflect.DeepEqual(p.Relax, want) {
		t.Errorf("Relax = %v, want %v", p.Relax, want)
	}
	if got := p.String(); got != "strict, relaxed: io_uring, perf" {
		t.Errorf("String = %q", got)
	}
	if got := (Policy{}).String(); got != "strict" {
		t.Errorf("zero String = %q", got)
	}
	if !p.Relaxed(Perf) || p.Relaxed(UserNS) {
		t.Errorf("Relaxed wrong for %v", p)
	}
	if _, err := New([]string{"ptrace"}); err == nil {
		t.Error("unknown group accepted")
	}
}

// TestTableNames holds the hand-written table to names the architectures have, each
// named once.
func TestTableNames(t *testing.T) {
	known := func(n string) bool {
		for _, a := range Arches {
			if _, ok := number(a, n); ok {
				return true
			}
		}
		return false
	}
	seen := map[string]string{}
	note := func(n, where string) {
		if !known(n) {
			t.Errorf("%s: %q is no system call of amd64 or arm64", where, n)
		}
		if w, ok := seen[n]; ok {
			t.Errorf("%q is in %s and in %s", n, w, where)
		}
		seen[n] = where
	}
	for _, n := range allowed {
		note(n, "allowed")
	}
	for _, rf := range refusals {
		for _, n := range rf.names {
			note(n, "refusals ("+rf.why+")")
		}
		if rf.action != Deny && rf.action != Absent {
			t.Errorf("refusal %v: action %s", rf.names, rf.action)
		}
	}
	for _, c := range conditional {
		note(c.rule.Name, "conditional")
		for _, d := range c.rule.DenyIf {
			if d.Mask != lo32 || d.Arg != c.rule.DenyIf[0].Arg {
				t.Errorf("%s: a refusing condition must compare the low 32 bits of one argument: %+v", c.rule.Name, d)
			}
		}
	}
}

// TestRelaxation: relaxing a group allows exactly its calls.
func TestRelaxation(t *testing.T) {
	strict := Compile(Policy{})
	for _, g := range Groups {
		p, _ := New([]string{string(g.Name)})
		relaxed := Compile(p)
		var changed []string
		for i, r := range relaxed {
			if !reflect.DeepEqual(r, strict[i]) {
				if r.Action != Allow {
					t.Errorf("%s: relaxing changed %s to %s", g.Name, r.Name, r.Action)
				}
				changed = append(changed, r.Name)
			}
		}
		want := map[Group][]string{
			UserNS: {"chroot", "clone", "clone3", "fsconfig", "fsmount", "fsopen", "fspick", "mount", "mount_setattr",
				"move_mount", "open_tree", "open_tree_attr", "pivot_root", "setns", "umount2", "unshare"},
			IOURing: {"io_uring_enter", "io_uring_register", "io_uring_setup"},
			Perf:    {"perf_event_open"},
			Sockets: {"socket", "socketpair"},
		}[g.Name]
		if !reflect.DeepEqual(changed, want) {
			t.Errorf("relaxing %s changed %v, want %v", g.Name, changed, want)
		}
	}
}

func TestStrictRefusals(t *testing.T) {
	rs := Compile(Policy{})
	for name, want := range map[string]Action{
		"unshare": Deny, "setns": Deny, "mount": Deny, "clone3": Absent, "clone": AllowIf,
		"io_uring_setup": Absent, "io_uring_enter": Absent, "io_uring_register": Absent,
		"ioctl": DenyIf, "socket": AllowIf, "socketpair": AllowIf, "perf_event_open": Deny,
		"bpf": Deny, "keyctl": Deny, "userfaultfd": Deny, "ptrace": Allow, "process_vm_readv": Allow,
		"tuxcall": Absent, "futex_waitv": Absent, "read": Allow,
	} {
		r, ok := rs.Rule(name)
		if !ok || r.Action != want {
			t.Errorf("%s: %s, want %s", name, r.Action, want)
		}
		if r.Action != Allow && r.Why == "" {
			t.Errorf("%s: refused without a reason", name)
		}
	}
	if _, ok := rs.Rule("no_such_call"); ok {
		t.Error("Rule found a call that does not exist")
	}
}

func TestArch(t *testing.T) {
	for in, want := range map[string]Arch{"amd64": AMD64, "x86_64": AMD64, "arm64": ARM64, "aarch64": ARM64} {
		if got, err := ParseArch(in); err != nil || got != want {
			t.Errorf("ParseArch(%q) = %v, %v", in, got, err)
		}
	}
	_, err := ParseArch("riscv64")
	var ea ErrArch
	if !errors.As(err, &ea) {
		t.Errorf("ParseArch(riscv64) = %v, want ErrArch", err)
	}
	if _, err := BPF(Compile(Policy{}), "riscv64"); !errors.As(err, &ea) {
		t.Errorf("BPF(riscv64) = %v, want ErrArch", err)
	}
}

func TestTablesSorted(t *testing.T) {
	if !slices.IsSorted(allowed) {
		t.Error("allowed is not sorted")
	}
	if !slices.IsSorted(allNames[:]) {
		t.Error("allNames is not sorted")
	}
	for _, a := range Arches {
		cs, _ := calls(a)
		if !slices.IsSortedFunc(cs, func(x, y sysnum) int { return strings.Compare(x.name, y.name) }) {
			t.Errorf("%s's table is not sorted by name", a)
		}
	}
}
