package gitgate

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPropertyEveryTree generates histories (commits, merges with any tree,
// renames of directories, repository look-alikes assembled piece by piece,
// nested, in other case, with links and executable files for markers, and
// edits inside a look-alike the host already has) and checks each branch's
// verdict against an oracle that checks out every new commit and scans the
// files: a branch must be refused exactly when one of its new commits'
// checkouts has a directory with HEAD beside objects and refs or beside
// commondir (any entry type, any case) that the host's checkout does not
// have, or differs from the host's checkout inside the host's look-alike
// other than in its objects and refs. Where real git takes a directory of
// a checkout for a repository, the oracle must say so too.
func TestPropertyEveryTree(t *testing.T) {
	isolate(t)
	const histories = 40
	rng := rand.New(rand.NewPCG(19, 2))
	host := filepath.Join(t.TempDir(), "host")
	gitT(t, ".", "init", "-q", host)
	base := treeState{
		"README.md":                         {mode: "100644", data: "hello\n"},
		"fixtures/repo.git/HEAD":            {mode: "100644", data: "ref: refs/heads/main\n"},
		"fixtures/repo.git/config":          {mode: "100644", data: "[core]\n\tbare = true\n"},
		"fixtures/repo.git/objects/.keep":   {mode: "100644"},
		"fixtures/repo.git/refs/heads/main": {mode: "100644", data: "x\n"},
	}
	var stream bytes.Buffer
	writeCommit(&stream, "refs/heads/main", 1, nil, base)
	fastImport(t, host, stream.String())
	gitT(t, host, "checkout", "-q", "main")
	baseID := gitT(t, host, "rev-parse", "HEAD")
	agent := newAgent(t, host)

	g := &historyGen{rng: rng, mark: 1, baseID: baseID, trees: map[int]treeState{}, parents: map[int][]int{}}
	stream.Reset()
	tips := make([]int, histories)
	for h := range tips {
		tips[h] = g.history(&stream, fmt.Sprintf("refs/heads/h%d", h), base)
	}
	fastImport(t, agent, stream.String())
	res := fetchT(t, host, agent, Policy{})

	baseDir := t.TempDir()
	extract(t, agent, baseID, baseDir)
	baseDirs := lookAlikes(t, baseDir)
	oracle := map[int]bool{}
	refusedN := 0
	for h, tip := range tips {
		want := false
		for _, m := range g.reach(tip) {
			ok, ex := oracle[m]
			if !ex {
				ok = g.oracle(t, agent, m, baseDir, baseDirs)
				oracle[m] = ok
			}
			want = want || ok
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

type fileEntry struct{ mode, data string }

// treeState is a tree as path -> file.
type treeState map[string]fileEntry

func (s treeState) clone() treeState {
	c := treeState{}
	for k, v := range s {
		c[k] = v
	}
	return c
}

// put adds a file, removing what would make the tree invalid (a file
// where a directory is needed, or the reverse).
func (s treeState) put(p string, e fileEntry) {
	for k := range s {
		if strings.HasPrefix(k, p+"/") || strings.HasPrefix(p, k+"/") {
			delete(s, k)
		}
	}
	s[p] = e
}

type historyGen struct {
	edit    func(g *historyGen, s treeState) // one random edit; lookAlikeEdit when nil
	rng     *rand.Rand
	mark    int
	baseID  string
	trees   map[int]treeState
	parents map[int][]int // mark -> parent marks (0: the base)
	ids     map[int]string
}

var (
	genDirs   = []string{"", "d", "d/e", "D", "fixtures", "fixtures/repo.git", "fixtures/repo.git/sub"}
	genLeaves = []string{"HEAD", "head", "objects/.keep", "objects/ab/cd", "OBJECTS/x", "objects", "refs/heads/main",
		"refs", "Refs/x", "commondir", "config", "hooks/post-checkout", "info/exclude", "x.txt"}
)

// change makes one random edit of s.
func (g *historyGen) change(s treeState) {
	if g.edit != nil {
		g.edit(g, s)
		return
	}
	switch g.rng.IntN(16) {
	case 0, 1, 2, 3, 4, 5, 6, 7, 8: // an ordinary file
		s.put(strings.TrimPrefix(genDirs[g.rng.IntN(len(genDirs))]+"/src.txt", "/"), fileEntry{mode: "100644", data: fmt.Sprintf("%d\n", g.rng.IntN(3))})
	case 9: // delete something
		keys := sortedKeys(s)
		if len(keys) > 0 {
			delete(s, keys[g.rng.IntN(len(keys))])
		}
	case 10: // rename a directory
		from, to := genDirs[1+g.rng.IntN(len(genDirs)-1)], genDirs[1+g.rng.IntN(len(genDirs)-1)]
		if from == to || strings.HasPrefix(to, from+"/") {
			return
		}
		for _, k := range sortedKeys(s) {
			if strings.HasPrefix(k, from+"/") {
				e := s[k]
				delete(s, k)
				s.put(to+k[len(from):], e)
			}
		}
	default:
		dir := genDirs[g.rng.IntN(len(genDirs))]
		leaf := genLeaves[g.rng.IntN(len(genLeaves))]
		p := strings.TrimPrefix(dir+"/"+leaf, "/")
		e := fileEntry{mode: "100644", data: fmt.Sprintf("%d\n", g.rng.IntN(3))}
		switch {
		case strings.EqualFold(leaf, "HEAD"):
			e.data = "ref: refs/heads/main\n"
		case (leaf == "objects" || leaf == "refs") && g.rng.IntN(2) == 0 && !strings.HasPrefix(dir, "fixtures"):
			e = fileEntry{mode: "120000", data: "."} // a link to its own directory
		case leaf == "objects" || leaf == "refs":
			e.mode = "100755" // git's access(X_OK) takes an executable file
		case leaf == "commondir":
			e.data = "../" + []string{"d", "fixtures/repo.git", "nowhere"}[g.rng.IntN(3)] + "\n"
		}
		s.put(p, e)
	}
}

// history writes one branch: a line of commits, maybe a side line merged
// in with a tree of the generator's choosing. It returns the tip's mark.
func (g *historyGen) history(w *bytes.Buffer, ref string, base treeState) int {
	line := func(from int, s treeState, n int) (int, treeState) {
		for range n {
			s = s.clone()
			for range 1 + g.rng.IntN(3) {
				g.change(s)
			}
			g.mark++
			g.parents[g.mark] = []int{from}
			g.trees[g.mark] = s
			writeCommit(w, ref, g.mark, g.fromOf([]int{from}), s)
			from = g.mark
		}
		return from, s
	}
	tip, s := line(0, base, 1+g.rng.IntN(2))
	if g.rng.IntN(3) > 0 {
		side, ss := line(0, base, 1+g.rng.IntN(2))
		m := s.clone()
		for k, v := range ss { // the union, this side winning
			if _, ok := m[k]; !ok {
				m.put(k, v)
			}
		}
		if g.rng.IntN(4) == 0 {
			g.change(m) // an evil merge
		}
		g.mark++
		g.parents[g.mark] = []int{tip, side}
		g.trees[g.mark] = m
		writeCommit(w, ref, g.mark, g.fromOf([]int{tip, side}), m)
		tip, s = g.mark, m
	}
	if g.rng.IntN(2) == 0 {
		tip, _ = line(tip, s, 1)
	}
	return tip
}

func (g *historyGen) fromOf(marks []int) []string {
	var out []string
	for _, m := range marks {
		if m == 0 {
			out = append(out, g.baseID)
		} else {
			out = append(out, fmt.Sprintf(":%d", m))
		}
	}
	return out
}

// reach returns the new commits (marks) reachable from tip.
func (g *historyGen) reach(tip int) []int {
	seen := map[int]bool{}
	var out []int
	stack := []int{tip}
	for len(stack) > 0 {
		m := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if m == 0 || seen[m] {
			continue
		}
		seen[m] = true
		out = append(out, m)
		stack = append(stack, g.parents[m]...)
	}
	return out
}

// oracle checks out commit mark and says whether it breaks the rule.
func (g *historyGen) oracle(t *testing.T, agent string, mark int, baseDir string, baseDirs map[string]bool) bool {
	t.Helper()
	dir := t.TempDir()
	extract(t, agent, g.commitID(t, agent, mark), dir)
	for d := range lookAlikes(t, dir) {
		if !baseDirs[d] {
			return true
		}
	}
	l := "fixtures/repo.git"
	return !slices.Equal(insideFiles(t, filepath.Join(baseDir, l)), insideFiles(t, filepath.Join(dir, l)))
}

// commitID finds the commit of a mark: the generator's trees are written
// in order, so the agent's marks file maps them.
func (g *historyGen) commitID(t *testing.T, agent string, mark int) string {
	t.Helper()
	if g.ids == nil {
		g.ids = map[int]string{}
		data, err := os.ReadFile(filepath.Join(agent, ".git", "marks"))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var m int
			var id string
			if _, err := fmt.Sscanf(l, ":%d %s", &m, &id); err == nil {
				g.ids[m] = id
			}
		}
	}
	id, ok := g.ids[mark]
	if !ok {
		t.Fatalf("no commit for mark %d", mark)
	}
	return id
}

// lookAlikes scans a checkout: every directory (links not followed) whose
// entries, folded to lower case, hold head with objects and refs or with
// commondir. Where real git takes a directory with a HEAD for a
// repository, the scan must have found it.
func lookAlikes(t *testing.T, top string) map[string]bool {
	t.Helper()
	found := map[string]bool{}
	filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if !d.IsDir() {
			return nil
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			t.Fatal(err)
		}
		has := map[string]bool{}
		for _, e := range entries {
			has[strings.ToLower(e.Name())] = true
		}
		rel, _ := filepath.Rel(top, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		if has["head"] && (has["commondir"] || has["objects"] && has["refs"]) {
			found[rel] = true
		}
		if _, err := os.Lstat(filepath.Join(p, "HEAD")); err == nil {
			cmd := exec.Command("git", "rev-parse", "--git-dir")
			cmd.Dir = p
			cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(p))
			if out, err := cmd.Output(); err == nil && strings.TrimSpace(string(out)) == "." && !found[rel] {
				t.Errorf("git takes %s of a checkout for a repository, the oracle does not", rel)
			}
		}
		return nil
	})
	return found
}

// insideFiles lists what lies inside a look-alike, but in its objects and
// refs: path, type and content.
func insideFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		if f := strings.ToLower(first); f == "objects" || f == "refs" {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		entry := fmt.Sprintf("%s %v", rel, fi.Mode().Type())
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			entry += fmt.Sprintf(" %v %q", fi.Mode().Perm()&0o100 != 0, data)
		} else if fi.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			entry += " -> " + target
		}
		out = append(out, entry)
		return nil
	})
	return out
}

// extract writes the tree of commit id to dir, as `git archive` gives it.
func extract(t *testing.T, repo, id, dir string) {
	t.Helper()
	out, err := gitCmd(repo, "archive", "--format=tar", id).Output()
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			os.MkdirAll(p, 0o755)
		case tar.TypeSymlink:
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.Symlink(h.Linkname, p); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			os.MkdirAll(filepath.Dir(p), 0o755)
			data, _ := io.ReadAll(tr)
			if err := os.WriteFile(p, data, os.FileMode(h.Mode)&0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// writeCommit writes a fast-import commit whose tree is exactly s.
func writeCommit(w *bytes.Buffer, ref string, mark int, parents []string, s treeState) {
	fmt.Fprintf(w, "commit %s\nmark :%d\ncommitter T <t@example.invalid> %d +0000\ndata 1\nc\n", ref, mark, 1700000000+mark)
	for i, p := range parents {
		if i == 0 {
			fmt.Fprintf(w, "from %s\n", p)
		} else {
			fmt.Fprintf(w, "merge %s\n", p)
		}
	}
	w.WriteString("deleteall\n")
	for _, k := range sortedKeys(s) {
		e := s[k]
		fmt.Fprintf(w, "M %s inline %s\ndata %d\n%s\n", e.mode, k, len(e.data), e.data)
	}
	w.WriteString("\n")
}

func fastImport(t testing.TB, repo, stream string) {
	t.Helper()
	cmd := gitCmd(repo, "fast-import", "--quiet", "--export-marks="+filepath.Join(repo, ".git", "marks"))
	cmd.Stdin = strings.NewReader(stream)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fast-import: %v\n%s", err, out)
	}
}

func sortedKeys(s treeState) []string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
