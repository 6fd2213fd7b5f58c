package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// benchProxy measures the egress proxy from inside the sandbox against the same
// requests made directly on the host, in one run: a 256 MiB download (throughput)
// and small requests on fresh connections (added latency). The origin listens on a
// non-loopback address of this machine, allowed explicitly (the proxy refuses this
// host's addresses otherwise).
func benchProxy(r runner, bin string) error {
	ip, err := hostAddr()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return err
	}
	defer ln.Close()
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
	go func() { _ = http.Serve(ln, mux) }()
	base := "http://" + ln.Addr().String()
	allow := ln.Addr().String()

	speed := func(inSandbox bool) (float64, error) {
		script := fmt.Sprintf(`curl -s -o /dev/null -w '%%{speed_download}' %s/big`, base)
		out, err := runScript(r, bin, allow, inSandbox, script)
		if err != nil {
			return 0, err
		}
		return strconv.ParseFloat(strings.TrimSpace(out), 64)
	}
	latency := func(inSandbox bool) (time.Duration, error) {
		var urls []string
		for i := 0; i < 60; i++ {
			urls = append(urls, "-o /dev/null "+base+"/small")
		}
		script := `curl -s -H 'Connection: close' -w '%{time_total}\n' ` + strings.Join(urls, " ")
		out, err := runScript(r, bin, allow, inSandbox, script)
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
	fmt.Println("egress proxy (default mode), in one run")
	var direct, proxied []float64
	for i := 0; i < 3; i++ {
		d, err := speed(false)
		if err != nil {
			return err
		}
		p, err := speed(true)
		if err != nil {
			return err
		}
		direct, proxied = append(direct, d), append(proxied, p)
	}
	sort.Float64s(direct)
	sort.Float64s(proxied)
	fmt.Printf("  256 MiB download: direct on the host %.0f MB/s, through the proxy from the sandbox %.0f MB/s: %.2fx (target >= 0.8x)\n",
		direct[1]/1e6, proxied[1]/1e6, proxied[1]/direct[1])
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

// runScript runs a shell script on the host or in the sandbox (default egress, the
// origin allowed) as the benchmark user and returns its output.
func runScript(r runner, bin, allow string, inSandbox bool, script string) (string, error) {
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
		return "", fmt.Errorf("%s: %v: %s", script[:20], err, errb.String())
	}
	return out.String(), nil
}

// hostAddr is a non-loopback IPv4 address of this machine.
func hostAddr() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String(), nil
		}
	}
	return "", fmt.Errorf("no non-loopback IPv4 address to serve the benchmark origin on")
}
