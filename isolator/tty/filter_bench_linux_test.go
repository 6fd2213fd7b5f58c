package tty

import (
	"io"
	"testing"
)

// BenchmarkPty is what a relay's output copy moves through the kernel alone: text
// written to a raw pty slave and read from its master, the bound a filter of the
// copy is measured against.
func BenchmarkPty(b *testing.B) {
	in := benchOutputs()["text"]
	master, slave, err := Open()
	if err != nil {
		b.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	sfd, err := fdOf(slave)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := MakeRaw(sfd); err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	b.SetBytes(int64(len(in)))
	go func() {
		buf := make([]byte, 32*1024)
		for {
			if _, err := master.Read(buf); err != nil {
				done <- err
				return
			}
		}
	}()
	for b.Loop() {
		if _, err := slave.Write(in); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	slave.Close()
	if err := <-done; err != nil && err != io.EOF {
		_ = err // EIO once the slave is closed
	}
}
