package netlab

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Line is a line of output and the time it arrived.
type Line struct {
	Time time.Time
	Text string
}

// maxLines bounds what a Log keeps, against a process that loops.
const maxLines = 200_000

// Log collects the output of a process line by line, with the time each line
// arrived, and lets a test wait for a line. It keeps the first 200000 lines
// and counts the rest.
type Log struct {
	mu      sync.Mutex
	partial []byte
	lines   []Line
	dropped int
	changed chan struct{} // closed and replaced on every new line
	closed  bool
}

// Write implements io.Writer.
func (l *Log) Write(p []byte) (int, error) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	added := false
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		if len(l.lines) < maxLines {
			l.lines = append(l.lines, Line{Time: now, Text: string(l.partial[:i])})
			added = true
		} else {
			l.dropped++
		}
		l.partial = l.partial[i+1:]
	}
	if added {
		l.notify()
	}
	return len(p), nil
}

// finish ends a partial last line and wakes every waiter for good.
func (l *Log) finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.lines = append(l.lines, Line{Time: time.Now(), Text: string(l.partial)})
		l.partial = nil
	}
	l.closed = true
	l.notify()
}

func (l *Log) notify() {
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// Lines returns a copy of the complete lines so far.
func (l *Log) Lines() []Line {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Line(nil), l.lines...)
}

// String returns every line so far, each ending with a newline.
func (l *Log) String() string {
	var b strings.Builder
	for _, line := range l.Lines() {
		b.WriteString(line.Text)
		b.WriteByte('\n')
	}
	if n := l.Dropped(); n > 0 {
		fmt.Fprintf(&b, "[netlab: %d more lines not kept]\n", n)
	}
	return b.String()
}

// Dropped returns the number of lines past the first 200000.
func (l *Log) Dropped() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

// Await waits until a line from number from on contains substr and returns
// it with its number. ok is false when the time is up or the output ended
// first.
func (l *Log) Await(from int, substr string, timeout time.Duration) (line Line, n int, ok bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		for i := from; i < len(l.lines); i++ {
			if strings.Contains(l.lines[i].Text, substr) {
				line := l.lines[i]
				l.mu.Unlock()
				return line, i, true
			}
		}
		from = max(from, len(l.lines))
		if l.closed {
			l.mu.Unlock()
			return Line{}, 0, false
		}
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			return Line{}, 0, false
		}
	}
}
