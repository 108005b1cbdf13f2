package gitgate

import (
	"context"
	"fmt"
	"strings"
)

// DefaultBase is the revision agentbox diff compares with when none is
// named: the merge base of HEAD with its upstream branch, or HEAD when there
// is no upstream, or "" when the repository has no commit yet (no base).
func DefaultBase(ctx context.Context, dir string) string {
	g := newGit(dir)
	out, err := g.run(ctx, nil, "merge-base", "HEAD", "@{upstream}")
	if err != nil {
		if _, err := g.run(ctx, nil, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err != nil {
			if _, err := g.run(ctx, nil, "rev-parse", "--git-dir"); err == nil {
				return "" // no commit yet: there is no base
			}
		}
		return "HEAD"
	}
	return strings.TrimSpace(string(out))
}

// ReadAt returns the files named in paths (relative to dir) as they are at
// revision rev, without a checkout: nil for a file the revision lacks. A
// revision that names no commit is an error.
func ReadAt(ctx context.Context, dir, rev string, paths ...string) ([][]byte, error) {
	g := newGit(dir)
	if strings.HasPrefix(rev, "-") {
		return nil, fmt.Errorf("invalid revision %q", rev)
	}
	if _, err := g.run(ctx, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}"); err != nil {
		if _, err := g.run(ctx, nil, "rev-parse", "--git-dir"); err != nil {
			return nil, fmt.Errorf("%s is not in a git repository", dir)
		}
		return nil, fmt.Errorf("unknown revision %q: no commit of that name in the repository", rev)
	}
	out := make([][]byte, len(paths))
	for i, p := range paths {
		spec := rev + ":./" + p
		if _, err := g.run(ctx, nil, "cat-file", "-e", spec); err != nil {
			continue // not in that revision
		}
		data, err := g.run(ctx, nil, "cat-file", "blob", spec)
		if err != nil {
			return nil, fmt.Errorf("reading %s at %s: %s", p, rev, stderrLine(err))
		}
		out[i] = data
	}
	return out, nil
}
