// Command agentbox compiles agentbox.yaml into a locked-down container
// sandbox for AI coding agents. See `agentbox --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	_ "github.com/agentbox-dev/agentbox/internal/gctune" // before the rest initialises
)

func main() {
	// Ctrl-C or a SIGTERM cancels the command's context: bump's requests,
	// docker compose, git. Then the signals are let go: a second Ctrl-C
	// kills as usual.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	code := run(ctx, realDeps(), os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
