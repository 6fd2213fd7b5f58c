package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// throughputRuns is how many times each download runs, in pairs of a direct and a
// proxied one; the median is reported. Even, so each order of a pair runs as often.
const throughputRuns = 8

// benchProxy measures the egress proxy from inside the sandbox against the same
// requests made directly on the host, in one run: a 256 MiB download as a plain HTTP
// request and through a CONNECT tunnel (curl --proxytunnel: the bytes of every HTTPS
// connection, without TLS's cost on both ends hiding the relay's), and small requests
// on fresh connections (added latency). The origin is an outside host: a network
// namespace this benchmark creates, joined by a veth pair, allowed explicitly (the
// proxy refuses private addresses otherwise).
func benchProxy(r runner, bin string) error {
	if os.Getuid() != 0 {
		fmt.Println("egress proxy throughput: skipped (run as root: the origin is a network namespace this benchmark creates)")
		return nil
	}
	o, err := startOrigin()
	if err != nil {
		return err
	}
	defer o.stop()
	base := "http://" + o.addr
	allow := o.addr

	// speed runs one download and returns its speed and the CPU time of the run's
	// processes (curl; in the sandbox also devsandbox, bwrap, the init and the proxy),
	// and how long a small request made just before it took. That small request comes
	// first in the same shell, direct and in the sandbox alike: in a sandbox it is the
	// first connection to the proxy, which starts the proxy (on demand, see
	// proxy/service), so the download measures the relay and not that start, which is
	// reported on its own. Every download starts from the same TCP state: the kernel's
	// per-destination metrics (RTT, reordering, cwnd) that earlier connections between
	// the host and the origin saved are flushed first, on both sides (the sandbox's
	// network namespace is new each run).
	speed := func(inSandbox bool, curlArgs, path string) (download, error) {
		o.resetMetrics()
		script := fmt.Sprintf(`curl -s %s -o /dev/null -w '%%{time_total} ' %s/small && curl -s %s -o /dev/null -w '%%{speed_download}' %s%s`,
			curlArgs, base, curlArgs, base, path)
		before := o.sample()
		out, cpu, err := runScript(r, bin, allow, inSandbox, script)
		if err != nil {
			return download{}, err
		}
		after := o.sample()
		f := strings.Fields(out)
		if len(f) != 2 {
			return download{}, fmt.Errorf("curl printed %q, want the small request's time and the speed", out)
		}
		first, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return download{}, err
		}
		v, err := strconv.ParseFloat(f[1], 64)
		d := download{speed: v, cpu: cpu, first: time.Duration(first * float64(time.Second))}
		d.account(before, after)
		if trace {
			fmt.Printf("      %-8s script %5.1f ms: CPUs busy %5.1f ms, of it the script's processes %5.1f ms, the origin %5.1f ms (waited %4.1f ms for a CPU), other work %5.1f ms\n",
				map[bool]string{false: "direct", true: "proxied"}[inSandbox], ms(d.wall), ms(d.busy), ms(cpu), ms(d.origin), ms(d.originWait), ms(d.other))
		}
		return d, err
	}
	latency := func(inSandbox bool) (time.Duration, error) {
		var urls []string
		for i := 0; i < 60; i++ {
			urls = append(urls, "-o /dev/null "+base+"/small")
		}
		script := `curl -s -H 'Connection: close' -w '%{time_total}\n' ` + strings.Join(urls, " ")
		out, _, err := runScript(r, bin, allow, inSandbox, script)
		if err != nil {
			return 0, err
		}
		var ds []time.Duration
		for _, l := range strings.Fields(out) {
			f, err := strconv.ParseFloat(l, 64)
			if err != nil {
				return 0, err
			}
			ds = append(ds, time.Duration(f*float64(time.Second)))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2], nil
	}
	fmt.Printf("egress proxy throughput (default mode), origin in a test network namespace, %d pairs of downloads (direct and proxied, each order in half of them), medians\n", throughputRuns)
	// CPU time depends less on the machine's load than speed does: a launch with one
	// small request is what a sandboxed download's CPU includes besides the transfer
	// (speed makes one small request before each download).
	var launches []time.Duration
	for i := 0; i < throughputRuns; i++ {
		_, cpu, err := runScript(r, bin, allow, true, fmt.Sprintf(`curl -s -o /dev/null %s/small`, base))
		if err != nil {
			return err
		}
		launches = append(launches, cpu)
	}
	launch := median(launches)
	for _, c := range []struct {
		name, curlArgs, target string
	}{
		{"256 MiB, plain HTTP", "", ">= 0.5x"},
		{"256 MiB, CONNECT tunnel", "--proxytunnel", ">= 0.8x"},
	} {
		var direct, proxied, ratios []float64
		var directCPU, proxiedCPU, directFirst, proxiedFirst, directOther, proxiedOther []time.Duration
		var pairs []pair
		for i := 0; i < throughputRuns; i++ {
			// Each pair's two downloads run back to back, in the other order in every
			// other pair, so neither side always follows the other (a sandbox's exit, or
			// the direct download's, never lands on the same side).
			var d, p download
			var err error
			if i%2 == 0 {
				if d, err = speed(false, c.curlArgs, "/big"); err == nil {
					p, err = speed(true, c.curlArgs, "/big")
				}
			} else {
				if p, err = speed(true, c.curlArgs, "/big"); err == nil {
					d, err = speed(false, c.curlArgs, "/big")
				}
			}
			if err != nil {
				return err
			}
			if trace {
				fmt.Printf("    %s run %d: direct %5.0f MB/s, proxied %5.0f MB/s: %.2fx, load %s\n", c.name, i, d.speed/1e6, p.speed/1e6, p.speed/d.speed, loadavg())
			}
			direct, proxied, ratios = append(direct, d.speed), append(proxied, p.speed), append(ratios, p.speed/d.speed)
			directCPU, proxiedCPU = append(directCPU, d.cpu), append(proxiedCPU, p.cpu)
			directFirst, proxiedFirst = append(directFirst, d.first), append(proxiedFirst, p.first)
			directOther, proxiedOther = append(directOther, d.other), append(proxiedOther, p.other)
			pairs = append(pairs, pair{ratio: p.speed / d.speed, other: d.other + p.other})
		}
		sort.Float64s(ratios)
		dm, pm := medianf(direct), medianf(proxied)
		fmt.Printf("  %-24s direct on the host %5.0f MB/s, through the proxy from the sandbox %5.0f MB/s: %.2fx (target %s)\n",
			c.name, dm/1e6, pm/1e6, pm/dm, c.target)
		fmt.Printf("  %-24s each pair's own ratio: median %.2fx, range %.2f-%.2fx\n", "", medianf(ratios), ratios[0], ratios[len(ratios)-1])
		// Other work on the machine during a download slows the proxied one more: its
		// three processes keep both CPUs busy, the direct download's two do not.
		sort.Slice(pairs, func(i, j int) bool { return pairs[i].other < pairs[j].other })
		var quiet []float64
		for _, p := range pairs[:(len(pairs)+1)/2] {
			quiet = append(quiet, p.ratio)
		}
		fmt.Printf("  %-24s other work on the machine while they ran: median %.0f ms direct, %.0f ms proxied; the half of the pairs with the least: ratio median %.2fx\n",
			"", ms(median(directOther)), ms(median(proxiedOther)), medianf(quiet))
		fmt.Printf("  %-24s CPU of curl on the host %4.0f ms; of the sandbox's processes and the proxy %4.0f ms less a launch's %3.0f ms = %4.0f ms (origin not counted)\n",
			"", ms(median(directCPU)), ms(median(proxiedCPU)), ms(launch), ms(median(proxiedCPU)-launch))
		fmt.Printf("  %-24s the request before it, the sandbox's first (it starts the proxy): direct %.2f ms, through the proxy %.2f ms\n",
			"", ms(median(directFirst)), ms(median(proxiedFirst)))
	}
	dl, err := latency(false)
	if err != nil {
		return err
	}
	pl, err := latency(true)
	if err != nil {
		return err
	}
	fmt.Printf("  small request, new connection each: p50 direct %.2f ms, through the proxy %.2f ms: +%.2f ms (target < 1 ms)\n",
		ms(dl), ms(pl), ms(pl-dl))
	return nil
}

// trace (BENCH_TRACE=1) prints every download, not only the medians.
var trace = os.Getenv("BENCH_TRACE") != ""

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// origin is the benchmark's outside host: a network namespace joined to this one by a
// veth pair, running this program as the HTTP server (serveOrigin).
type origin struct {
	ns, link, addr string
	cmd            *exec.Cmd
}

func startOrigin() (*origin, error) {
	var b [2]byte
	var subnet int
	for {
		_, _ = rand.Read(b[:])
		subnet = 1 + int(b[0])%250
		// A subnet in use here (a concurrent test's outside host) would answer for it.
		out, err := exec.Command("ip", "-o", "addr", "show", "to", fmt.Sprintf("10.231.%d.0/30", subnet)).Output()
		if err != nil || len(out) == 0 {
			break
		}
	}
	id := hex.EncodeToString(b[:])
	o := &origin{ns: "dsbbench-" + id, link: "dsbbh" + id, addr: fmt.Sprintf("10.231.%d.2:8080", subnet)}
	ip := fmt.Sprintf("10.231.%d.2", subnet)
	steps := [][]string{
		{"ip", "netns", "add", o.ns},
		{"ip", "link", "add", o.link, "type", "veth", "peer", "name", "dsbbn" + id},
		{"ip", "link", "set", "dsbbn" + id, "netns", o.ns},
		{"ip", "addr", "add", fmt.Sprintf("10.231.%d.1/30", subnet), "dev", o.link},
		{"ip", "link", "set", o.link, "up"},
		{"ip", "netns", "exec", o.ns, "ip", "addr", "add", ip + "/30", "dev", "dsbbn" + id},
		{"ip", "netns", "exec", o.ns, "ip", "link", "set", "dsbbn" + id, "up"},
		{"ip", "netns", "exec", o.ns, "ip", "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			o.stop()
			return nil, fmt.Errorf("%s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	self, err := os.Executable()
	if err != nil {
		o.stop()
		return nil, err
	}
	o.cmd = exec.Command("ip", "netns", "exec", o.ns, self, "-origin", o.addr)
	o.cmd.Stderr = os.Stderr
	if err := o.cmd.Start(); err != nil {
		o.stop()
		return nil, err
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", o.addr, time.Second)
		if err == nil {
			c.Close()
			return o, nil
		}
		if time.Now().After(deadline) {
			o.stop()
			return nil, fmt.Errorf("benchmark origin %s not serving: %v", o.addr, err)
		}
	}
}

// resetMetrics forgets what earlier connections between the host and the origin left
// in the kernel's TCP metrics cache of either namespace (`ip tcp_metrics`): the RTT,
// reordering and cwnd a new connection to the same address starts from.
func (o *origin) resetMetrics() {
	host, _, _ := net.SplitHostPort(o.addr)
	_ = exec.Command("ip", "-n", o.ns, "tcp_metrics", "flush", "all").Run()
	_ = exec.Command("ip", "tcp_metrics", "delete", host).Run()
}

// download is one timed download: its speed, the CPU of the script that ran it (curl;
// in the sandbox also the launch and the proxy), the small request before it, and what
// else the machine did while the script ran.
type download struct {
	speed float64
	cpu   time.Duration
	first time.Duration
	// wall is the script's time; busy the CPU time all CPUs spent on anything in it;
	// origin (and originWait, its time waiting for a CPU) the origin's share; other
	// what is left after the script's processes and the origin: other processes on
	// the machine and kernel threads (softirq, network namespace teardown).
	wall, busy, origin, originWait, other time.Duration
}

func (d *download) account(before, after cpuSample) {
	d.wall = after.at.Sub(before.at)
	d.busy = time.Duration(runtime.NumCPU())*d.wall - (after.idle - before.idle)
	d.origin = after.origin - before.origin
	d.originWait = after.originWait - before.originWait
	d.other = max(0, d.busy-d.cpu-d.origin)
}

type pair struct {
	ratio float64
	other time.Duration
}

func medianf(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// cpuSample is the machine's state at one moment for download.account: the CPUs' idle
// time (/proc/stat, in ticks of 10 ms) and the origin's run and run-queue wait time
// (its threads' schedstat, in ns).
type cpuSample struct {
	at                       time.Time
	idle, origin, originWait time.Duration
}

func (o *origin) sample() cpuSample {
	s := cpuSample{at: time.Now()}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
		if len(f) > 5 {
			idle, _ := strconv.ParseInt(f[4], 10, 64)
			iowait, _ := strconv.ParseInt(f[5], 10, 64)
			s.idle = time.Duration(idle+iowait) * 10 * time.Millisecond
		}
	}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", o.cmd.Process.Pid))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		run, _ := strconv.ParseInt(f[0], 10, 64)
		wait, _ := strconv.ParseInt(f[1], 10, 64)
		s.origin += time.Duration(run)
		s.originWait += time.Duration(wait)
	}
	return s
}

func (o *origin) stop() {
	if o.cmd != nil && o.cmd.Process != nil {
		_ = o.cmd.Process.Kill()
		_ = o.cmd.Wait()
	}
	_ = exec.Command("ip", "link", "del", o.link).Run()
	_ = exec.Command("ip", "netns", "del", o.ns).Run()
}

// serveOrigin serves /big (256 MiB) and /small on addr until killed.
func serveOrigin(addr string) error {
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	mux := http.NewServeMux()
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(256<<20))
		for i := 0; i < 256; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/small", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	return http.ListenAndServe(addr, mux)
}

// runScript runs a shell script on the host or in the sandbox (default egress, the
// origin allowed) as the benchmark user and returns its output.
func runScript(r runner, bin, allow string, inSandbox bool, script string) (string, time.Duration, error) {
	argv := []string{"/bin/sh", "-c", script}
	if inSandbox {
		argv = append([]string{bin, "--allow", allow, "--"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = r.dir, r.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", 0, fmt.Errorf("%s: %v: %s", script[:20], err, errb.String())
	}
	return out.String(), cpuTime(cmd.ProcessState), nil
}

// cpuTime is the user and system CPU of a finished process and of the descendants it
// waited for (devsandbox waits for bwrap and the proxy).
func cpuTime(ps *os.ProcessState) time.Duration {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
