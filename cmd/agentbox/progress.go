package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progressFlagUsage is the help of the global --quiet.
const progressFlagUsage = "no progress lines of agentbox's own on stderr (bump's steps, up's build and start, run's build); they are printed only when stderr is a terminal"

// progress prints agentbox's own progress lines on stderr during long
// work (bump's npm and Debian steps, up's build and start, run's build):
// only when stderr is a terminal and --quiet was not given. Output that
// Docker, compose or the agent write is theirs and not touched. A nil
// *progress prints nothing.
type progress struct {
	w     io.Writer
	quiet *bool // --quiet, read when a line is printed (after the flags are)
	now   func() time.Time
	mu    sync.Mutex
}

func newProgress(stderr io.Writer, quiet *bool) *progress {
	return &progress{w: stderr, quiet: quiet, now: time.Now}
}

// on reports whether progress lines are printed.
func (p *progress) on() bool {
	return p != nil && !*p.quiet && isTerminal(p.w)
}

// printf prints one progress line.
func (p *progress) printf(format string, args ...any) {
	if !p.on() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format+"\n", args...)
}

// step prints "agentbox: what…" and returns the function to call when the
// step ends: it prints "agentbox: done (TIME)", or "agentbox: what: failed
// (TIME)" when err is not nil.
func (p *progress) step(what string) func(done string, err error) {
	if !p.on() {
		return func(string, error) {}
	}
	start := p.now()
	p.printf("agentbox: %s…", what)
	return func(done string, err error) {
		took := elapsed(p.now().Sub(start))
		if err != nil {
			p.printf("agentbox: %s: failed (%s)", what, took)
			return
		}
		p.printf("agentbox: %s (%s)", done, took)
	}
}

// elapsed is d for a person: tenths of a second under a minute, seconds
// above.
func elapsed(d time.Duration) string {
	if d >= time.Minute {
		return d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
