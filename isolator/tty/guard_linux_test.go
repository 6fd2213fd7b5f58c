package tty

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// What a command leaves in the user's terminal emulator (modes beyond termios) is
// turned off when the relay closes, after the command's own output.
func TestRelayResetsModesLeftOn(t *testing.T) {
	g := startRelay(t, Size{Rows: 24, Cols: 80}, nil)
	const left = `\033[?1049h\033[?2004h\033[?1000h\033[?1006h\033=\033[?25l\033[?1h\033[>1u\033[>4;1m\033[31mX`
	cmd := g.startChild(t, `printf '`+left+`'`)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	want := "\x1b[?1049h\x1b[?2004h\x1b[?1000h\x1b[?1006h\x1b=\x1b[?25l\x1b[?1h\x1b[>1u\x1b[>4;1m\x1b[31mX" +
		"\x1b[?1049l\x1b[?1l\x1b[?25h\x1b[?1000l\x1b[?1006l\x1b[?2004l\x1b>\x1b[<1u\x1b[>4m\x1b[m"
	if got := g.finish(t); got != want {
		t.Errorf("screen = %q, want %q", got, want)
	}
}

// A command that puts back what it changed (a TUI that exits normally) gets
// nothing added: the screen is its output, byte for byte.
func TestRelayLeavesTidyCommandAlone(t *testing.T) {
	g := startRelay(t, Size{Rows: 24, Cols: 80}, nil)
	const out = `\033[?1049h\033[?2004h\033[?1002h\033=\033[?25l\033[>1u\033[1;32mX\033[0m\033[<u\033[?25h\033>\033[?1002l\033[?2004l\033[?1049l`
	cmd := g.startChild(t, `printf '`+out+`'`)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	want := "\x1b[?1049h\x1b[?2004h\x1b[?1002h\x1b=\x1b[?25l\x1b[>1u\x1b[1;32mX\x1b[0m\x1b[<u\x1b[?25h\x1b>\x1b[?1002l\x1b[?2004l\x1b[?1049l"
	if got := g.finish(t); got != want {
		t.Errorf("screen = %q, want %q", got, want)
	}
}

// emulator stands for the user's terminal emulator on the outer master: it answers
// a window title report (CSI 21 t) and primary device attributes (CSI c) in the
// order asked, but late: an answer is sent only when a later query is answered or
// when the test says time has passed (late), as a remote or busy terminal would.
type emulator struct {
	master  *os.File
	mu      sync.Mutex
	pending []byte
	done    chan struct{}
}

func startEmulator(master *os.File) *emulator {
	e := &emulator{master: master, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		buf := make([]byte, 4096)
		var acc []byte
		for {
			n, err := master.Read(buf)
			acc = append(acc, buf[:n]...)
			for {
				i := bytes.Index(acc, []byte("\x1b["))
				if i < 0 || len(acc) < i+3 || acc[i+2] == '2' && len(acc) < i+5 {
					break // none, or not all read yet
				}
				e.mu.Lock()
				switch {
				case bytes.HasPrefix(acc[i:], []byte("\x1b[21t")):
					e.pending = append(e.pending, "INJECTED\r"...)
				case bytes.HasPrefix(acc[i:], []byte("\x1b[c")):
					e.pending = append(e.pending, "\x1b[?62;22c"...)
					_, _ = master.Write(e.pending)
					e.pending = nil
				}
				e.mu.Unlock()
				acc = acc[i+2:]
			}
			if err != nil {
				return
			}
		}
	}()
	return e
}

// late sends the answers still held back, then END, which ends the shell's reading.
func (e *emulator) late() {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.master.Write(append(e.pending, "END\r"...))
	e.pending = nil
}

// A query the command sent just before it ended is answered after the relay
// closed; the answer must not reach the user's shell as typed input. Before the
// relay settled the terminal at Close, the shell read INJECTED.
func TestRelayDiscardsLateAnswers(t *testing.T) {
	for _, tc := range []struct{ name, script string }{
		{"title report", `printf '\033[21t'`},
		{"after a DA1 query of its own", `printf '\033[c\033[21t'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outerMaster, outerSlave := openPair(t)
			innerMaster, innerSlave := openPair(t)
			em := startEmulator(outerMaster)
			r, err := StartRelay(outerSlave, outerSlave, innerMaster, FilterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			g := &relayRig{innerMaster: innerMaster, innerSlave: innerSlave, relay: r}
			cmd := g.startChild(t, tc.script)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("child: %v", err)
			}
			closed := make(chan error, 1)
			go func() { closed <- r.Close() }()
			select {
			case err := <-closed:
				if err != nil {
					t.Errorf("Close: %v", err)
				}
			case <-time.After(testTimeout):
				t.Fatal("Close did not return")
			}
			em.late()
			// The user's shell reads its terminal (cooked again) to END.
			lines := make(chan []string, 1)
			go func() {
				var got []string
				sc := bufio.NewScanner(outerSlave)
				for sc.Scan() {
					got = append(got, sc.Text())
					if strings.HasSuffix(sc.Text(), "END") {
						break
					}
				}
				lines <- got
			}()
			select {
			case got := <-lines:
				if len(got) != 1 || got[0] != "END" {
					t.Errorf("the shell read %q, want only END", got)
				}
			case <-time.After(testTimeout):
				t.Fatal("the shell's read did not end")
			}
			outerSlave.Close()
			<-em.done
		})
	}
}

// Tidy, the container backends' writer: the resets follow the output, and the
// answers that have arrived are discarded.
func TestTidyFinish(t *testing.T) {
	master, slave := openPair(t)
	var screen bytes.Buffer
	td := NewTidy(&screen, FilterOptions{})
	if _, err := td.Write([]byte("\x1b[?1049h\x1b[?2004hX\x1b[6n")); err != nil {
		t.Fatal(err)
	}
	if _, err := master.Write([]byte("\x1b[5;1R\r")); err != nil { // the terminal's answer
		t.Fatal(err)
	}
	fds := []unix.PollFd{{Fd: int32(slave.Fd()), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, int(testTimeout/time.Millisecond))
	for deadline := time.Now().Add(testTimeout); err == unix.EINTR && time.Now().Before(deadline); {
		// The Go runtime's preemption signal interrupts a poll: ask again.
		n, err = unix.Poll(fds, int(time.Until(deadline)/time.Millisecond)+1)
	}
	if n != 1 || err != nil {
		t.Fatalf("the answer did not arrive: %d, %v", n, err)
	}
	if err := td.Finish(slave.Fd()); err != nil {
		t.Fatal(err)
	}
	if got, want := screen.String(), "\x1b[?1049h\x1b[?2004hX\x1b[6n\x1b[?1049l\x1b[?2004l"; got != want {
		t.Errorf("screen = %q, want %q", got, want)
	}
	if n, err := unix.IoctlGetInt(int(slave.Fd()), unix.TIOCINQ); err != nil || n != 0 {
		t.Errorf("pending input after Finish: %d bytes (%v)", n, err)
	}
}
