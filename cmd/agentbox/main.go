// Command agentbox compiles agentbox.yaml into a locked-down container
// sandbox for AI coding agents. See `agentbox --help`.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
