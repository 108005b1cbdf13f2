// Package progress prints agentbox's own progress lines on stderr during
// long work, only when stderr is a terminal and --quiet was not given.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// FlagUsage is the help of the global --quiet.
const FlagUsage = "no progress lines of agentbox's own on stderr (bump's steps, up's build and start, run's build); they are printed only when stderr is a terminal"

// Progress prints agentbox's own progress lines on stderr during long
// work (bump's npm and Debian steps, up's build and start, run's build):
// only when stderr is a terminal and --quiet was not given. Output that
// Docker, compose or the agent write is theirs and not touched. A nil
// *Progress prints nothing.
type Progress struct {
	w     io.Writer
	quiet *bool // --quiet, read when a line is printed (after the flags are)
	now   func() time.Time
	mu    sync.Mutex
}

// New is a Progress on stderr; quiet is --quiet, read when a line is printed.
func New(stderr io.Writer, quiet *bool) *Progress {
	return &Progress{w: stderr, quiet: quiet, now: time.Now}
}

// On reports whether progress lines are printed.
func (p *Progress) On() bool {
	return p != nil && !*p.quiet && IsTerminal(p.w)
}

// Printf prints one progress line.
func (p *Progress) Printf(format string, args ...any) {
	if !p.On() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format+"\n", args...)
}

// Step prints "agentbox: what…" and returns the function to call when the
// step ends: it prints "agentbox: done (TIME)", or "agentbox: what: failed
// (TIME)" when err is not nil.
func (p *Progress) Step(what string) func(done string, err error) {
	if !p.On() {
		return func(string, error) {}
	}
	start := p.now()
	p.Printf("agentbox: %s…", what)
	return func(done string, err error) {
		took := elapsed(p.now().Sub(start))
		if err != nil {
			p.Printf("agentbox: %s: failed (%s)", what, took)
			return
		}
		p.Printf("agentbox: %s (%s)", done, took)
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

// IsTerminal reports whether v is a terminal (not merely a character
// device: /dev/null is none).
func IsTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
