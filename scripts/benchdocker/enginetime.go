package main

import (
	"bufio"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/devsandbox/devsandbox/scripts/benchrun"
)

// engineSplit alternates `docker exec CONTAINER true` (a) and a warm devsandbox run
// (b), n runs each, while the engine's event stream for the kept container is read,
// and splits each run's wall time into the engine's own (from its exec_start event to
// its exec_die: the exec's process, its runtime's start and end, what the process
// does) and the client's (the rest: the client's start, its requests, the end of the
// stream). A warm run's spread is then seen where it is: when the engine's share
// varies as much on both sides, the ratio of the medians moves with it.
type engineSplit struct {
	wall, engine [2][]time.Duration
	missed       int // runs whose exec events did not come
}

// engineEvents reads `docker events` for one container: exec_start and exec_die times.
type engineEvents struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	starts []time.Time
	dies   []time.Time
}

func watchEngine(container string) (*engineEvents, error) {
	cmd := exec.Command("docker", "events", "--filter", "container="+container, "--format", "{{.TimeNano}} {{.Action}}")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("reading the engine's events: %w", err)
	}
	w := &engineEvents{cmd: cmd}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			ts, action, _ := strings.Cut(sc.Text(), " ")
			ns, err := strconv.ParseInt(ts, 10, 64)
			if err != nil {
				continue
			}
			t := time.Unix(0, ns)
			w.mu.Lock()
			switch {
			case strings.HasPrefix(action, "exec_start"):
				w.starts = append(w.starts, t)
			case strings.HasPrefix(action, "exec_die"):
				w.dies = append(w.dies, t)
			}
			w.mu.Unlock()
		}
	}()
	return w, nil
}

func (w *engineEvents) stop() {
	_ = w.cmd.Process.Kill()
	_ = w.cmd.Wait()
}

// dies is how many exec_die events have come.
func (w *engineEvents) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.dies)
}

// within is the engine's time of the first exec started in [from, to]: its start to
// the first exec_die after it.
func (w *engineEvents) within(from, to time.Time) (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.starts {
		if s.Before(from) || s.After(to) {
			continue
		}
		for _, d := range w.dies {
			if !d.Before(s) && !d.After(to) {
				return d.Sub(s), true
			}
		}
	}
	return 0, false
}

func splitEngine(r benchrun.Runner, container string, n int, a, b []string) (engineSplit, error) {
	var sp engineSplit
	w, err := watchEngine(container)
	if err != nil {
		return sp, err
	}
	defer w.stop()
	type run struct {
		side       int
		start, end time.Time
	}
	var runs []run
	for i := 0; i < n; i++ {
		for side, argv := range [][]string{a, b} {
			start := time.Now()
			if _, err := r.Time(argv); err != nil {
				return sp, err
			}
			runs = append(runs, run{side, start, time.Now()})
		}
	}
	// The stream lags the engine a little: wait for every run's exec_die, a while at most.
	for deadline := time.Now().Add(3 * time.Second); w.count() < len(runs) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	for _, rn := range runs {
		eng, ok := w.within(rn.start, rn.end)
		if !ok {
			sp.missed++
			continue
		}
		sp.wall[rn.side] = append(sp.wall[rn.side], rn.end.Sub(rn.start))
		sp.engine[rn.side] = append(sp.engine[rn.side], eng)
	}
	return sp, nil
}

// print shows per side the median, min and max of the wall time, the engine's share
// and the client's.
func (sp engineSplit) print(nameA, nameB string) {
	fmt.Printf("  engine's own time (exec_start to exec_die events) and the client's (the rest), ms: median [min-max]\n")
	for side, name := range []string{nameA, nameB} {
		client := make([]time.Duration, len(sp.wall[side]))
		for i := range client {
			client[i] = sp.wall[side][i] - sp.engine[side][i]
		}
		fmt.Printf("    %-44s wall %s  engine %s  client %s\n", name, spread(sp.wall[side]), spread(sp.engine[side]), spread(client))
	}
	if sp.missed > 0 {
		fmt.Printf("    (%d runs without their exec's events left out)\n", sp.missed)
	}
}

func spread(d []time.Duration) string {
	if len(d) == 0 {
		return "-"
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	msf := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	return fmt.Sprintf("%5.1f [%5.1f-%5.1f]", msf(s[(len(s)-1)/2]), msf(s[0]), msf(s[len(s)-1]))
}
