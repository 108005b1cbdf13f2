package main

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeTerminal is a pseudo-terminal: the test writes to term (a
// terminal, as progress.IsTerminal sees it) and reads what was written with output.
type fakeTerminal struct {
	term *os.File
	done chan struct{}
	mu   sync.Mutex
	buf  bytes.Buffer
}

func newFakeTerminal(t *testing.T) *fakeTerminal {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	master := os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	term, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Raw: what is written arrives as written (no \r added to \n).
	if tio, err := unix.IoctlGetTermios(int(term.Fd()), unix.TCGETS); err == nil {
		tio.Oflag &^= unix.OPOST
		tio.Lflag &^= unix.ECHO | unix.ICANON
		_ = unix.IoctlSetTermios(int(term.Fd()), unix.TCSETS, tio)
	}
	f := &fakeTerminal{term: term, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			f.mu.Lock()
			f.buf.Write(b[:n])
			f.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { term.Close(); master.Close(); <-f.done })
	return f
}

// output closes the terminal and returns everything written to it.
func (f *fakeTerminal) output() string {
	f.term.Close()
	<-f.done
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.String()
}
