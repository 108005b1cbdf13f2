package gitgate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
)

// hooksPathIn returns the host's hooks directory relative to top, when it
// lies below top (and outside .git): core.hooksPath as git spells it (~ and
// ~user expanded as git expands them, a relative path taken from top), and
// the directory git names for hooks (`git rev-parse --git-path hooks`: the
// same, or .git/hooks, which a user may have linked into the work tree),
// each as spelled and with the symlinks on its way resolved, compared with
// top as spelled and resolved. A path that does not exist yet is resolved
// as far as it exists.
func hooksPathIn(ctx context.Context, g gitRunner, top string) []string {
	var paths []string
	if out, err := g.run(ctx, nil, "config", "--type=path", "--get", "core.hooksPath"); err == nil {
		if p := strings.TrimSuffix(string(out), "\n"); p != "" {
			paths = append(paths, p)
		}
	}
	if out, err := g.run(ctx, nil, "rev-parse", "--path-format=absolute", "--git-path", "hooks"); err == nil {
		if p := strings.TrimSuffix(string(out), "\n"); p != "" {
			paths = append(paths, p)
		}
	}
	var rels []string
	for _, p := range paths {
		rels = hooksPathRel(top, p, rels)
	}
	return rels
}

// hooksPathRel adds to rels the spellings of hooks directory p (relative
// to top when not absolute) relative to top, when it lies below top.
func hooksPathRel(top, p string, rels []string) []string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(top, p)
	}
	add := func(base, p string) {
		rel, err := filepath.Rel(base, p)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			return
		}
		rel = filepath.ToSlash(rel)
		if c := split(rel); isDotGit(c[0]) {
			return // inside the git directory: no branch writes there
		}
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
