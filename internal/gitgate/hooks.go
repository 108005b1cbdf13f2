package gitgate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
)

// hooksPathIn returns the host's core.hooksPath relative to top, when it
// names a directory at or below top: as git spells it (with ~ and ~user
// expanded as git expands them, a relative path taken from top) and with
// every symlink on its way resolved, both compared with top with its own
// links resolved. A path that does not exist yet is resolved as far as it
// exists.
func hooksPathIn(ctx context.Context, g gitRunner, top string) []string {
	out, err := g.run(ctx, nil, "config", "--type=path", "--get", "core.hooksPath")
	if err != nil { // unset, or git cannot expand it
		return nil
	}
	p := strings.TrimSuffix(string(out), "\n")
	if p == "" {
		return nil
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(top, p)
	}
	var rels []string
	add := func(base, p string) {
		rel, err := filepath.Rel(base, p)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			return
		}
		rel = filepath.ToSlash(rel)
		for _, r := range rels {
			if r == rel {
				return
			}
		}
		rels = append(rels, rel)
	}
	p = filepath.Clean(p)
	realTop := resolvePrefix(top)
	realP := resolvePrefix(p)
	for _, base := range []string{top, realTop} {
		add(base, p)
		add(base, realP)
	}
	return rels
}

// resolvePrefix is p with the symlinks of its longest existing prefix
// resolved.
func resolvePrefix(p string) string {
	rest := ""
	for q := p; ; {
		if r, err := filepath.EvalSymlinks(q); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(q)
		if parent == q {
			return p
		}
		rest = filepath.Join(filepath.Base(q), rest)
		q = parent
	}
}

// isDir reports whether p is a directory that no symlink leads to below
// top (checked component by component from top).
func isRealDir(top, rel string) bool {
	p := top
	for _, c := range split(rel) {
		p = filepath.Join(p, c)
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}
