package task

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// resolveCommit returns the commit ref names in the repository at dir.
func resolveCommit(ctx context.Context, dir, ref string) (string, error) {
	out, err := gitOut(ctx, dir, "rev-parse", "-q", "--verify", "--end-of-options", ref+"^{commit}")
	if err != nil || out == "" {
		return "", fmt.Errorf("--ref %q: no such commit in the repository", ref)
	}
	return out, nil
}

// gitOut runs git (in dir, unless it is "") and returns its trimmed stdout.
func gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
