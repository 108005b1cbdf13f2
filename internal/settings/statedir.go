package settings

import (
	"fmt"
	"os"
	"path/filepath"
)

// StateDir is agentbox's directory sub on the host, outside every project
// and mounted into no sandbox: $XDG_STATE_HOME/agentbox/SUB, else
// ~/.local/state/agentbox/SUB.
func StateDir(sub string) (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "agentbox", sub), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding agentbox's state directory (%s): %w", sub, err)
	}
	return filepath.Join(home, ".local", "state", "agentbox", sub), nil
}
