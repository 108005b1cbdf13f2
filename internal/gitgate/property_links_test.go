package gitgate

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPropertyLinks generates histories of symlinks (chains, links to
// directories that other links pass through, loops, merges that join links
// made apart) and checks each branch's verdict against an oracle that
// checks out every new commit and follows each link on the filesystem: a
// branch must be refused exactly when a link's target, read from the
// link's directory, climbs out of the repository or names .husky (the
// check of a link's own change), or when the kernel's walk through the
// checkout leaves it, loops, or ends in .husky.
func TestPropertyLinks(t *testing.T) {
	isolate(t)
	const histories = 40
	rng := rand.New(rand.NewPCG(19, 3))
	host := filepath.Join(t.TempDir(), "host")
	gitT(t, ".", "init", "-q", host)
	base := treeState{"README.md": {mode: "100644", data: "hello\n"}, "a/x.txt": {mode: "100644", data: "x\n"}}
	var stream bytes.Buffer
	writeCommit(&stream, "refs/heads/main", 1, nil, base)
	fastImport(t, host, stream.String())
	gitT(t, host, "checkout", "-q", "main")
	baseID := gitT(t, host, "rev-parse", "HEAD")
	agent := newAgent(t, host)

	g := &historyGen{rng: rng, mark: 1, baseID: baseID, trees: map[int]treeState{}, parents: map[int][]int{}}
	g.edit = linkEdit
	stream.Reset()
	tips := make([]int, histories)
	for h := range tips {
		tips[h] = g.history(&stream, fmt.Sprintf("refs/heads/h%d", h), base)
	}
	fastImport(t, agent, stream.String())
	res := fetchT(t, host, agent, Policy{})

	verdict := map[int]bool{}
	refusedN := 0
	for h, tip := range tips {
		want := false
		for _, m := range g.reach(tip) {
			bad, ok := verdict[m]
			if !ok {
				dir := t.TempDir()
				extract(t, agent, g.commitID(t, agent, m), dir)
				bad = linksBreakRule(t, dir)
				verdict[m] = bad
			}
			want = want || bad
		}
		b := byName(t, res, fmt.Sprintf("h%d", h))
		if got := b.Status == StatusRefused; got != want {
			t.Errorf("history h%d: refused=%v, oracle says %v; reasons %+v", h, got, want, b.Reasons)
		}
		if want {
			refusedN++
		}
	}
	t.Logf("%d of %d histories refused", refusedN, histories)
	if refusedN < histories/5 || refusedN > histories*4/5 {
		t.Errorf("%d of %d histories refused: the generator should make both kinds", refusedN, histories)
	}
}

var (
	linkDirs    = []string{"", "a", "a/b", "c"}
	linkNames   = []string{"l", "m", "b", "c"}
	linkTargets = []string{".", "..", "../..", "a", "a/b", "c", "../c", "b", "l", "m", "m/x", ".husky", "../.husky", "b/.husky", "l/.husky", "c/.husky", "m/.husky"}
)

// linkEdit makes one random edit of s: a link, a file or a deletion.
func linkEdit(g *historyGen, s treeState) {
	switch g.rng.IntN(6) {
	case 0:
		keys := sortedKeys(s)
		if len(keys) > 0 {
			delete(s, keys[g.rng.IntN(len(keys))])
		}
	case 1:
		s.put(strings.TrimPrefix(linkDirs[g.rng.IntN(len(linkDirs))]+"/f.txt", "/"), fileEntry{mode: "100644", data: "f\n"})
	default:
		p := strings.TrimPrefix(linkDirs[g.rng.IntN(len(linkDirs))]+"/"+linkNames[g.rng.IntN(len(linkNames))], "/")
		s.put(p, fileEntry{mode: "120000", data: linkTargets[g.rng.IntN(len(linkTargets))]})
	}
}

// linksBreakRule is the oracle for one checkout.
func linksBreakRule(t *testing.T, top string) bool {
	t.Helper()
	bad := false
	filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if d.Type()&os.ModeSymlink == 0 {
			return nil
		}
		rel, _ := filepath.Rel(top, p)
		target, err := os.Readlink(p)
		if err != nil {
			t.Fatal(err)
		}
		// The link's own check: its target read from its directory.
		at := strings.Split(filepath.Dir(rel), "/")
		if at[0] == "." {
			at = nil
		}
		for _, c := range strings.Split(target, "/") {
			switch c {
			case ".":
			case "..":
				if len(at) == 0 {
					bad = true
					return nil
				}
				at = at[:len(at)-1]
			default:
				at = append(at, c)
			}
		}
		if len(at) > 0 && at[0] == ".husky" {
			bad = true
			return nil
		}
		// The kernel's walk through the checkout.
		end, ok := walkLinks(top, rel)
		if !ok || end == ".husky" || strings.HasPrefix(end, ".husky/") {
			bad = true
		}
		return nil
	})
	return bad
}

// walkLinks follows rel through the links of the checkout at top, as the
// kernel would, also past a missing component. ok is false when the walk
// leaves top or follows more than 40 links.
func walkLinks(top, rel string) (string, bool) {
	todo := strings.Split(rel, "/")
	var cur []string
	for hops := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return "", false
			}
			cur = cur[:len(cur)-1]
			continue
		}
		p := filepath.Join(top, filepath.Join(cur...), c)
		target, err := os.Readlink(p)
		if err != nil { // not a link, or missing
			cur = append(cur, c)
			continue
		}
		if hops++; hops > 40 {
			return "", false
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return strings.Join(cur, "/"), true
}
