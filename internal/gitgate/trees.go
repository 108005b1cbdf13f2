package gitgate

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// A commit's changes do not show everything its tree holds: a merge can
// assemble a directory from its parents without a path that differs from
// both. So every new commit's whole tree is read, through one `git cat-file
// --batch`, each tree object once: what a tree object holds below it
// depends on its id only (treeFacts).

// treeFacts is what the gate looks for below one tree object, paths relative
// to it ("" is the tree itself).
type treeFacts struct {
	gitDirs []gitDirFact // directories git would take for a repository
	partial []partialDir // other directories with a HEAD or marker entry
	dotGit  []string     // entries named .git in some spelling
	links   []linkFact   // symlinks
}

type gitDirFact struct {
	path      string
	head      string // the name of its HEAD entry, as spelled
	commondir string // the blob of its commondir file, or ""
}

type linkFact struct{ path, blob string }

// partialDir is a directory with some of HEAD, objects, refs and commondir
// (has: their names folded to lower case), not enough for git.
type partialDir struct {
	path string
	has  []string
}

// treeReader answers tree objects from the trees the sizer read (cache),
// and the others from a running `git cat-file --batch`. Trees are named by
// raw ids.
type treeReader struct {
	w      *io.PipeWriter
	r      *bufio.Reader
	stop   func()
	done   chan error
	cache  treeCache
	memo   map[string]*treeFacts
	budget int // tree objects left to read
}

// maxTrees bounds the tree objects read for one fetch.
const maxTrees = 2_000_000

func newTreeReader(ctx context.Context, g gitRunner, cache treeCache) *treeReader {
	ctx, cancel := context.WithCancel(ctx)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	t := &treeReader{w: inW, r: bufio.NewReader(outR), done: make(chan error, 1), cache: cache, memo: map[string]*treeFacts{}, budget: maxTrees}
	go func() {
		err := g.stream(ctx, inR, outW, "cat-file", "--batch")
		outW.CloseWithError(io.ErrUnexpectedEOF)
		inR.CloseWithError(io.ErrClosedPipe)
		t.done <- err
	}()
	t.stop = func() {
		inW.Close() // git ends at the end of its input
		outR.CloseWithError(io.ErrClosedPipe)
		cancel()
	}
	return t
}

// abort stops git after a failed read.
func (t *treeReader) abort() {
	t.stop()
	<-t.done
}

// close ends git and returns its error. After a failed read, the error
// that matters is the read's.
func (t *treeReader) close() error {
	t.w.Close()
	err := <-t.done
	t.stop()
	return err
}

// read returns the entries of the tree of raw id.
func (t *treeReader) read(id string) ([]rawEntry, error) {
	if t.budget--; t.budget < 0 {
		return nil, fmt.Errorf("the branches hold more than %d directories", maxTrees)
	}
	if entries, ok := t.cache[id]; ok {
		return entries, nil
	}
	hexID := hex.EncodeToString([]byte(id))
	if _, err := io.WriteString(t.w, hexID+"\n"); err != nil {
		return nil, fmt.Errorf("reading tree %s: %w", hexID, err)
	}
	header, err := t.r.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("reading tree %s: %w", hexID, err)
	}
	f := strings.Fields(header)
	if len(f) != 3 || f[0] != hexID || f[1] != "tree" {
		return nil, fmt.Errorf("reading tree %s: unexpected git cat-file output %q", hexID, header)
	}
	size, err := strconv.Atoi(f[2])
	if err != nil || size < 0 {
		return nil, fmt.Errorf("reading tree %s: unexpected git cat-file output %q", hexID, header)
	}
	buf := make([]byte, size+1)
	if _, err := io.ReadFull(t.r, buf); err != nil {
		return nil, fmt.Errorf("reading tree %s: %w", hexID, err)
	}
	entries, err := parseTree(string(buf[:size]), len(id))
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", hexID, err)
	}
	return entries, nil
}

// parseTree reads a tree object: entries of "MODE NAME\0" and a raw id of
// rawLen bytes. Names and ids are substrings of b.
func parseTree(b string, rawLen int) ([]rawEntry, error) {
	entries := make([]rawEntry, 0, strings.Count(b, "\x00"))
	for len(b) > 0 {
		sp := strings.IndexByte(b, ' ')
		nul := strings.IndexByte(b, 0)
		if sp < 0 || nul < sp || len(b) < nul+1+rawLen {
			return nil, fmt.Errorf("malformed tree entry")
		}
		entries = append(entries, rawEntry{typ: entryType(b[:sp]), name: b[sp+1 : nul], id: b[nul+1 : nul+1+rawLen]})
		b = b[nul+1+rawLen:]
	}
	return entries, nil
}

// facts returns what the tree of raw id holds below it. Blob ids in the
// facts are hex.
func (t *treeReader) facts(id string) (*treeFacts, error) {
	if f, ok := t.memo[id]; ok {
		return f, nil
	}
	entries, err := t.read(id)
	if err != nil {
		return nil, err
	}
	f := &treeFacts{}
	has := map[string]rawEntry{}
	for _, e := range entries {
		if isGitDirEntry(e.name) {
			has[strings.ToLower(fold(e.name))] = e
		}
	}
	_, commondir := has["commondir"]
	_, objects := has["objects"]
	_, refs := has["refs"]
	if head, ok := has["head"]; ok && (commondir || objects && refs) {
		g := gitDirFact{head: head.name}
		if c := has["commondir"]; commondir && c.typ != typeTree && c.typ != typeGitlink {
			g.commondir = hex.EncodeToString([]byte(c.id))
		}
		f.gitDirs = append(f.gitDirs, g)
	} else if len(has) > 0 {
		pd := partialDir{}
		for n := range has {
			pd.has = append(pd.has, n)
		}
		f.partial = append(f.partial, pd)
	}
	for _, e := range entries {
		if isDotGit(e.name) {
			f.dotGit = append(f.dotGit, e.name)
		}
		switch e.typ {
		case typeSymlink:
			f.links = append(f.links, linkFact{e.name, hex.EncodeToString([]byte(e.id))})
		case typeTree:
			sub, err := t.facts(e.id)
			if err != nil {
				return nil, err
			}
			f.add(e.name+"/", sub)
		}
	}
	t.memo[id] = f
	return f, nil
}

// add appends sub's facts with their paths below prefix.
func (f *treeFacts) add(prefix string, sub *treeFacts) {
	for _, g := range sub.gitDirs {
		g.path = strings.TrimSuffix(prefix+g.path, "/")
		f.gitDirs = append(f.gitDirs, g)
	}
	for _, p := range sub.partial {
		p.path = strings.TrimSuffix(prefix+p.path, "/")
		f.partial = append(f.partial, p)
	}
	for _, p := range sub.dotGit {
		f.dotGit = append(f.dotGit, prefix+p)
	}
	for _, l := range sub.links {
		f.links = append(f.links, linkFact{prefix + l.path, l.blob})
	}
}

// Entry types of a tree entry's mode.
const (
	typeTree    = 0o040000
	typeFile    = 0o100000
	typeSymlink = 0o120000
	typeGitlink = 0o160000
)

// entryType reads a tree entry's mode by its type bits, as git does: a
// zero-padded "040000" is a tree too (the host's fsck refuses those today;
// the walk does not rely on it).
func entryType(mode string) uint64 {
	m, err := strconv.ParseUint(mode, 8, 32)
	if err != nil {
		return 0
	}
	return m & 0o170000
}
