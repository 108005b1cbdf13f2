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

// What a checkout of a branch's new trees holds, measured from the trees
// alone: every tree below a new one is read once (the host's own too), and
// each tree's shape (its deepest and longest path, its files and bytes) is
// computed once from its entries' shapes.
// rawEntry is an entry of a tree: its type (entryType), name and raw id.
type rawEntry struct {
	typ      uint64
	name, id string
}

// treeCache holds the trees read from the quarantine, by raw id: the sizer
// reads the new trees in rounds of `git cat-file --batch`, and the tree walk
// (treeReader) finds them here instead of reading them again.
type treeCache map[string][]rawEntry

type entryKind uint8

const (
	kindFile    entryKind = iota // a blob: a file or a symlink
	kindTree                     // a directory
	kindGitlink                  // a commit of another repository: an empty directory
)

// treeReasons checks the entries of trees and what a checkout of each
// holds.
func (s *sizer) treeReasons(trees []string, names map[string]string) []Reason {
	var why []Reason
	var deepest, longest, most, largest string
	for _, id := range trees {
		if n := len(s.trees[id]); n > s.limits.TreeEntries {
			why = append(why, Reason{Path: shorten(names[id]), Why: fmt.Sprintf("a tree of %d entries (limit %d)", n, s.limits.TreeEntries)})
		}
		sh := s.shapeOf(id)
		if deepest == "" || sh.depth > s.shapeOf(deepest).depth {
			deepest = id
		}
		if longest == "" || sh.length > s.shapeOf(longest).length {
			longest = id
		}
		if most == "" || sh.files > s.shapeOf(most).files {
			most = id
		}
		if largest == "" || sh.bytes > s.shapeOf(largest).bytes {
			largest = id
		}
	}
	if len(trees) == 0 {
		return why
	}
	if d := s.shapeOf(deepest).depth; d > s.limits.Depth {
		why = append(why, Reason{Path: s.path(deepest, true), Why: fmt.Sprintf(
			"a path of %d components (limit %d): git 2.39's checkout crashes a few thousand deep", d, s.limits.Depth)})
	}
	if l := s.shapeOf(longest).length; l > s.limits.PathBytes {
		why = append(why, Reason{Path: s.path(longest, false), Why: fmt.Sprintf("a path of %d bytes (limit %d)", l, s.limits.PathBytes)})
	}
	if n := s.shapeOf(most).files; n > s.limits.CheckoutFiles {
		why = append(why, Reason{Why: fmt.Sprintf("a checkout of one of its trees makes %s files (limit %d)", countText(n), s.limits.CheckoutFiles)})
	}
	if n := s.shapeOf(largest).bytes; n > s.limits.CheckoutSize {
		why = append(why, Reason{Why: fmt.Sprintf("a checkout of one of its trees writes %s (limit %s)", bytesText(n), bytesText(s.limits.CheckoutSize))})
	}
	return why
}

// shape is what a checkout of a tree holds: its deepest path (in
// components) and its longest (in bytes), with the entry each goes through
// (-1 in an empty tree), and its files and their bytes (saturated at
// maxCount).
type shape struct {
	depth, length    int
	deepVia, longVia int
	files, bytes     int64
}

// maxCount is where shape's sums stop: a tree that names another many
// times multiplies it.
const maxCount = 1 << 62

func addSat(a, b int64) int64 {
	if a > maxCount-b {
		return maxCount
	}
	return a + b
}

// shapeOf returns the shape of tree id; the sizer has read every tree and
// blob size below it (readBelow).
func (s *sizer) shapeOf(id string) shape {
	if sh, ok := s.shapes[id]; ok {
		return sh
	}
	sh := shape{deepVia: -1, longVia: -1}
	for i, e := range s.trees[id] {
		d, l := 1, len(e.name)
		switch kindOf(e.typ) {
		case kindTree:
			c := s.shapeOf(e.id)
			if c.depth > 0 {
				d, l = 1+c.depth, len(e.name)+1+c.length
			}
			sh.files, sh.bytes = addSat(sh.files, c.files), addSat(sh.bytes, c.bytes)
		case kindGitlink:
			sh.files = addSat(sh.files, 1) // an empty directory
		default:
			sh.files, sh.bytes = addSat(sh.files, 1), addSat(sh.bytes, s.objects[e.id].size)
		}
		if d > sh.depth {
			sh.depth, sh.deepVia = d, i
		}
		if l > sh.length {
			sh.length, sh.longVia = l, i
		}
	}
	s.shapes[id] = sh
	return sh
}

// path spells the deepest or longest path below tree id, shortened.
func (s *sizer) path(id string, deepest bool) string {
	var p strings.Builder
	for p.Len() <= shownPath {
		sh := s.shapeOf(id)
		via := sh.longVia
		if deepest {
			via = sh.deepVia
		}
		if via < 0 {
			break
		}
		e := s.trees[id][via]
		if p.Len() > 0 {
			p.WriteByte('/')
		}
		p.WriteString(e.name)
		if kindOf(e.typ) != kindTree {
			break
		}
		id = e.id
	}
	return shorten(p.String())
}

// countText writes a count with thousands separated.
func countText(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// readBelow reads trees and every tree below them (the host's own too: a
// new tree may name one of them many times, or deep down), a round of
// `git cat-file --batch` per level, and the sizes of their blobs.
func (s *sizer) readBelow(ctx context.Context, trees []string) error {
	var blobs []string
	for want := trees; len(want) > 0; {
		if err := s.readTrees(ctx, want); err != nil {
			return err
		}
		next, seen := []string{}, map[string]bool{}
		for _, id := range want {
			for _, e := range s.trees[id] {
				_, read := s.trees[e.id]
				_, sized := s.objects[e.id]
				switch {
				case seen[e.id]:
				case kindOf(e.typ) == kindTree && !read:
					seen[e.id] = true
					next = append(next, e.id)
				case kindOf(e.typ) == kindFile && !sized:
					seen[e.id] = true
					blobs = append(blobs, e.id)
				}
			}
		}
		want = next
	}
	return s.readInfo(ctx, blobs)
}

// readTrees reads and parses the trees not read yet with one `git cat-file
// --batch`.
func (s *sizer) readTrees(ctx context.Context, ids []string) error {
	var want []string
	for _, id := range ids {
		if _, ok := s.trees[id]; !ok {
			want = append(want, id)
		}
	}
	if len(want) == 0 {
		return nil
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		var req strings.Builder
		for _, id := range want {
			req.WriteString(hex.EncodeToString([]byte(id)))
			req.WriteByte('\n')
		}
		err := s.g.stream(ctx, strings.NewReader(req.String()), pw, "cat-file", "--batch")
		pw.CloseWithError(err)
		done <- err
	}()
	err := s.readTreeBatch(bufio.NewReader(pr), want)
	pr.CloseWithError(io.ErrClosedPipe)
	if gerr := <-done; err == nil {
		err = gerr
	}
	if err != nil {
		return fmt.Errorf("reading the new trees: %w", err)
	}
	return nil
}

func (s *sizer) readTreeBatch(br *bufio.Reader, ids []string) error {
	for _, id := range ids {
		header, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		f := strings.Fields(header)
		var size int64
		if len(f) == 3 && raw(f[0]) == id && f[1] == "tree" {
			size, err = strconv.ParseInt(f[2], 10, 64)
		}
		if len(f) != 3 || raw(f[0]) != id || f[1] != "tree" || err != nil || size < 0 {
			return fmt.Errorf("unexpected git cat-file output %q", header)
		}
		buf := make([]byte, size+1) // the content and a newline
		if _, err := io.ReadFull(br, buf); err != nil {
			return err
		}
		entries, err := parseTree(string(buf[:size]), s.idLen/2)
		if err != nil {
			return fmt.Errorf("tree %x: %w", id, err)
		}
		s.trees[id] = entries
	}
	return nil
}

// kindOf is what git takes a tree entry of type typ (entryType) for: git
// takes any mode that is no file, link or directory for a gitlink.
func kindOf(typ uint64) entryKind {
	switch typ {
	case typeTree:
		return kindTree
	case typeFile, typeSymlink:
		return kindFile
	}
	return kindGitlink // an unreadable mode too (entryType 0)
}
