package gitgate

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Limits of the bundle of the agent's branches that agentbox accepts from
// the sandbox (fetch, and a task's collect).
const (
	MaxBundle     = 4 << 30 // bytes
	BundleTimeout = 15 * time.Minute
)

// RefPrefix is fetch's --prefix as a ref prefix: below refs/heads/ unless
// it names one of its own (refs/...), ending in "/".
func RefPrefix(p string) string {
	if !strings.HasPrefix(p, "refs/") {
		p = "refs/heads/" + p
	}
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// CheckTop refuses a project directory below the top of its repository:
// the paths of agentbox.yaml are relative to the project, the agent's clone
// and fetch's rules to the repository.
func CheckTop(ctx context.Context, dir string) error {
	top, err := TopLevel(ctx, dir)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return err
	}
	if t, err := filepath.EvalSymlinks(top); err != nil || t != abs {
		return fmt.Errorf("agentbox fetch needs the project directory to be the top of its git repository (%s), not %s", top, abs)
	}
	return nil
}

// FetchProject is agentbox fetch in the project directory dir, the top of
// its repository (CheckTop): bundle writes a bundle of the agent's branches
// to a temporary file and returns the policy its branches are judged by,
// then Fetch takes them under prefix (a ref prefix, RefPrefix).
func FetchProject(ctx context.Context, dir, prefix string, bundle func(ctx context.Context, w io.Writer) (Policy, error)) (*Result, error) {
	if err := CheckTop(ctx, dir); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp("", "agentbox-*.bundle")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	policy, err := bundle(ctx, f)
	if err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return Fetch(ctx, FetchOptions{Dir: dir, Bundle: f.Name(), Prefix: prefix, Policy: policy})
}
