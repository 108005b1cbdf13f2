package sandbox

import (
	"context"
	"io"
	"strings"
)

// FakeRunner is a Runner for tests: it answers each command line (the
// program's arguments joined by spaces, the program left out) from a map,
// and fails the test on a command line it was not told of.
type FakeRunner struct {
	T interface {
		Helper()
		Fatalf(format string, args ...any)
	}
	// Answers maps a command line to its stdout, or to an error, or to a
	// func() string called for each run (an answer that changes).
	Answers map[string]any
	// Ran are the command lines run, in order.
	Ran []string
}

// Run writes the answer of c's command line to c.Stdout, or returns it.
func (f *FakeRunner) Run(_ context.Context, c Cmd) error {
	f.T.Helper()
	line := strings.Join(c.Args[1:], " ")
	f.Ran = append(f.Ran, line)
	a, ok := f.Answers[line]
	if !ok {
		f.T.Fatalf("fake docker: unexpected command %q", line)
		return nil
	}
	switch a := a.(type) {
	case string:
		if c.Stdout != nil {
			_, _ = io.WriteString(c.Stdout, a)
		}
		return nil
	case func() string:
		if c.Stdout != nil {
			_, _ = io.WriteString(c.Stdout, a())
		}
		return nil
	case error:
		return a
	}
	f.T.Fatalf("fake docker: the answer to %q is neither a string, a func() string nor an error", line)
	return nil
}
