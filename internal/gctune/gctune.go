// Package gctune sets the garbage collector for a short command-line
// process, as its first package initialisation: most of agentbox's
// commands end within tens of milliseconds, and with Go's default (a
// collection each time the heap doubles, from 4 MB) a third of the CPU of
// `generate --check` went into collections of a heap that the process's
// end frees anyway. It collects when the heap grows fivefold instead, and
// in any case before the process passes a soft memory limit, so a long
// command (run following a task, bump resolving a large npm tree) stays
// small. GOGC and GOMEMLIMIT in the environment win.
//
// Go initialises packages in import-path order where their imports allow:
// this one imports only the runtime's, and its path sorts before the
// libraries whose initialisation allocates most (main imports it first).
package gctune

import (
	"os"
	"runtime/debug"
)

const (
	percent = 400
	limit   = 512 << 20
)

func init() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(percent)
	}
	if _, ok := os.LookupEnv("GOMEMLIMIT"); !ok {
		debug.SetMemoryLimit(limit)
	}
}
