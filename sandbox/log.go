package sandbox

import (
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
)

// StartLog starts cmd and returns its output, stdout and stderr together.
// Reading ends with an error naming the command's last line when it fails;
// Close waits for it.
func StartLog(cmd *exec.Cmd) (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	// One writer for both: exec gives the command a single pipe, so that
	// its lines (each one write) do not interleave mid-line.
	tail := &tailWriter{w: pw}
	cmd.Stdout, cmd.Stderr = tail, tail
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("running %s: %w", cmd.Args[0], err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := cmd.Wait(); err != nil {
			pw.CloseWithError(fmt.Errorf("%s %s: %s", filepath.Base(cmd.Args[0]), cmd.Args[1], FirstLine(tail.last(), err)))
			return
		}
		pw.Close()
	}()
	return &cmdReader{pr, done}, nil
}

type cmdReader struct {
	*io.PipeReader
	done chan struct{}
}

func (c *cmdReader) Close() error {
	err := c.PipeReader.Close()
	<-c.done
	return err
}

// tailWriter writes to w and keeps the end of what it wrote.
type tailWriter struct {
	w io.Writer
	b []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return t.w.Write(p)
}

// last is the last non-empty line written.
func (t *tailWriter) last() []byte {
	s := strings.TrimSpace(string(t.b))
	return []byte(s[strings.LastIndexByte(s, '\n')+1:])
}
