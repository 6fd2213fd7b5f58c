//go:build integration

package integration

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// devTools runs what developers run in a sandbox under the strict syscall policy and
// prints "NAME ok", "NAME missing" (not installed in the sandbox's view) or "NAME
// failed ...". $1 is the probe (the Go runtime), $2 a Java program.
const devTools = `
T=$(mktemp -d)
# check NAME TOOL COMMAND...: NAME is missing when TOOL is not on PATH.
check() { name=$1; tool=$2; shift 2; if ! command -v "$tool" >/dev/null 2>&1; then echo "$name missing"; return; fi
	if out=$("$@" 2>&1); then echo "$name ok"; else echo "$name failed: $(echo "$out" | tail -n 3 | tr '\n' ' ')"; fi; }
check git git sh -c 'cd '$T' && git init -q g && cd g && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m x && git log --oneline | grep -q x'
check ssh ssh sh -c 'ssh -V && ssh-keygen -q -t ed25519 -N "" -f '$T'/key && test -s '$T'/key.pub'
check python python3 python3 -c '
import collections, multiprocessing, signal, subprocess, threading
samples = collections.Counter()
signal.signal(signal.SIGPROF, lambda s, f: samples.update([f.f_code.co_name]))
signal.setitimer(signal.ITIMER_PROF, 0.001, 0.001)  # a sampling profiler without perf events
def busy():
    s = 0
    for i in range(3000000): s += i
busy(); signal.setitimer(signal.ITIMER_PROF, 0)
assert samples["busy"] > 0, samples
t = threading.Thread(target=busy); t.start(); t.join()
subprocess.run(["true"], check=True)
with multiprocessing.Pool(2) as p: assert p.map(abs, [-1, -2]) == [1, 2]
'
check go "$1" "$1" goruntime
check debugger "$1" "$1" debugger
check strace strace sh -c 'strace -f -o '$T'/trace sh -c true && grep -q execve '$T'/trace'
check strace-attach strace sh -c 'sleep 60 & p=$!; timeout 2 strace -p $p 2>&1 | grep -q attached; r=$?; kill $p; exit $r'
check gdb gdb sh -c 'gdb -batch -ex run --args /bin/true 2>&1 | grep -q "exited normally"'
check gdb-attach gdb sh -c 'sleep 60 & p=$!; gdb -batch -p $p -ex "info proc" 2>&1 | grep -q "process $p"; r=$?; kill $p; exit $r'
check node node node -e '
require("child_process").execFileSync("true")
const { Worker } = require("worker_threads")
new Worker("require(\"fs\").readdirSync(\"/\")", { eval: true }).on("exit", c => process.exit(c))'
check node-profiler node sh -c 'node --cpu-prof --cpu-prof-dir='$T'/prof -e "let s = 0; for (let i = 0; i < 3e7; i++) s += i" && ls '$T'/prof | grep -q cpuprofile'
check java java java "$2" "$T/rec.jfr"
check cc cc sh -c 'printf "int main(void) { return 0; }\n" > '$T'/t.c && cc -o '$T'/t '$T'/t.c && '$T'/t && make --version >/dev/null'
`

// javaProgram runs threads and a child process under a JFR recording (the JVM's
// sampling profiler, which needs no perf events) and checks it sampled.
const javaProgram = `
import java.nio.file.*;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordingFile;
public class Main {
  public static void main(String[] a) throws Exception {
    Recording r = new Recording();
    r.enable("jdk.ExecutionSample").withPeriod(java.time.Duration.ofMillis(10));
    r.start();
    Thread[] ts = new Thread[4];
    for (int i = 0; i < ts.length; i++) {
      ts[i] = new Thread(() -> { long s = 0; for (long j = 0; j < 400_000_000L; j++) s += j ^ (s >>> 3); if (s == 42) System.out.print(""); });
      ts[i].start();
    }
    for (Thread t : ts) t.join();
    if (new ProcessBuilder("true").start().waitFor() != 0) throw new RuntimeException("child failed");
    r.stop();
    Path f = Paths.get(a[0]);
    r.dump(f);
    long n = RecordingFile.readAllEvents(f).stream().filter(e -> e.getEventType().getName().equals("jdk.ExecutionSample")).count();
    if (n == 0) throw new RuntimeException("no samples");
  }
}
`

// What developers run keeps working under the strict policy: git, ssh, Python, Go,
// Node and Java runtimes with their sampling profilers, strace and gdb (starting and
// attaching to the sandbox's own processes), a C toolchain. bwrap shows the host's
// tools (the test machine installs them); the container images hold git, ssh and
// Python, and the Go probe in the project does what debuggers do (PTRACE_TRACEME,
// attach, registers, process_vm_readv) on every isolator.
func TestPolicyKeepsDevToolsWorking(t *testing.T) {
	all := []string{"git", "ssh", "python", "go", "debugger", "strace", "strace-attach", "gdb", "gdb-attach", "node", "node-profiler", "java", "cc"}
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		probe := p.installProbe()
		p.write("proj/Main.java", javaProgram)
		r := run(t, p.dir, nil, "", "--isolator="+iso, "--", "/bin/sh", "-c", devTools, "devtools", probe, p.dir+"/Main.java")
		if r.code != 0 {
			t.Fatalf("%s", r)
		}
		got := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			name, result, _ := strings.Cut(l, " ")
			got[name] = result
		}
		required := all
		if iso != "bwrap" {
			required = []string{"git", "ssh", "python", "go", "debugger"}
		}
		for _, name := range all {
			res, ok := got[name]
			switch {
			case !ok:
				t.Errorf("%s: no result\n%s", name, r)
			case res == "ok":
			case res == "missing" && !slices.Contains(required, name):
				t.Logf("%s: not in the %s sandbox's view", name, iso)
			case res == "missing" && os.Getenv("CI") == "":
				t.Logf("%s: not installed here (scripts/setup-test-env.sh installs it)", name)
			default:
				t.Errorf("%s: %s", name, res)
			}
		}
	})
}

// A project relaxes one group in its (trusted) project file: io_uring works there,
// every run says so, and config show and --dry-run show it. Without the file the
// same run is refused.
func TestSyscallRelaxation(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		probe := p.installProbe()
		t.Cleanup(func() { os.Remove(it.home + "/.config/devsandbox/trusted.toml") })
		if got := probeLines(p.mustSandbox(iso, nil, probe+" iouring"))["io_uring_setup"]; got == "ok" {
			t.Fatalf("io_uring works before the relaxation")
		}
		p.write("proj/.devsandbox.toml", "[sandbox]\nrelax_syscalls = [\"io_uring\"]\n")
		if r := run(t, p.dir, nil, "", "config", "trust"); r.code != 0 {
			t.Fatalf("config trust:\n%s", r)
		}
		r := p.sandbox(iso, nil, probe+" iouring")
		if r.code != 0 || probeLines(r.stdout)["io_uring_setup"] != "ok" {
			t.Errorf("io_uring relaxed for the project:\n%s", r)
		}
		if !strings.Contains(r.stderr, "the syscall policy is relaxed for this sandbox (sandbox.relax_syscalls from "+p.dir+"/.devsandbox.toml): strict, relaxed: io_uring") {
			t.Errorf("the run does not say the policy is relaxed:\n%s", r)
		}
		show := run(t, p.dir, nil, "", "config", "show")
		if !strings.Contains(show.stdout, `relax_syscalls = ["io_uring"]  # `+p.dir+"/.devsandbox.toml") {
			t.Errorf("config show:\n%s", show)
		}
		dry := run(t, p.dir, nil, "", "--isolator="+iso, "--dry-run", "--", "true")
		if dry.code != 0 || !strings.Contains(dry.stdout, "syscall policy (strict, relaxed: io_uring)") {
			t.Errorf("--dry-run does not show the relaxed policy:\n%s", dry)
		}
	})
}
