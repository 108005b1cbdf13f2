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

// Limits bound what one branch may bring; a branch over any of them is
// refused. A zero field takes its value from DefaultLimits.
type Limits struct {
	// NameBytes bounds the branch name: a longer one cannot be stored as
	// a ref file (a component and ".lock" within NAME_MAX, 255 bytes).
	NameBytes int
	// Objects bounds the new objects (commits, trees, blobs, tags): those
	// reachable from the branch and from no ref of the host's own.
	Objects int
	// ObjectSize bounds one new object, inflated: a blob of zeros packs
	// a thousand times smaller than it checks out.
	ObjectSize int64
	// TotalSize bounds all the new objects of the branch, inflated.
	TotalSize int64
	// Depth bounds the components of a path in a checkout of a new tree
	// (git 2.39's checkout crashes a few thousand deep and leaves
	// .git/index.lock behind).
	Depth int
	// PathBytes bounds the bytes of such a path (PATH_MAX).
	PathBytes int
	// TreeEntries bounds the entries of one new tree.
	TreeEntries int
	// CheckoutFiles and CheckoutSize bound the files, and their bytes, of
	// a checkout of a new tree: a tree that names another a thousand
	// times checks out a thousand copies of it.
	CheckoutFiles int64
	CheckoutSize  int64
}

// DefaultLimits are the limits of agentbox fetch and run.
var DefaultLimits = Limits{
	NameBytes:     250,
	Objects:       100_000,
	ObjectSize:    100 << 20,
	TotalSize:     1 << 30,
	Depth:         128,
	PathBytes:     4096,
	TreeEntries:   100_000,
	CheckoutFiles: 1_000_000,
	CheckoutSize:  10 << 30,
}

// orDefault fills the zero fields from DefaultLimits.
func (l Limits) orDefault() Limits {
	d := DefaultLimits
	if l.NameBytes > 0 {
		d.NameBytes = l.NameBytes
	}
	if l.Objects > 0 {
		d.Objects = l.Objects
	}
	if l.ObjectSize > 0 {
		d.ObjectSize = l.ObjectSize
	}
	if l.TotalSize > 0 {
		d.TotalSize = l.TotalSize
	}
	if l.Depth > 0 {
		d.Depth = l.Depth
	}
	if l.PathBytes > 0 {
		d.PathBytes = l.PathBytes
	}
	if l.TreeEntries > 0 {
		d.TreeEntries = l.TreeEntries
	}
	if l.CheckoutFiles > 0 {
		d.CheckoutFiles = l.CheckoutFiles
	}
	if l.CheckoutSize > 0 {
		d.CheckoutSize = l.CheckoutSize
	}
	return d
}

// shownPath is the most of a path a reason shows.
const shownPath = 200

// sizer measures branches against the limits in one repository (the
// quarantine), remembering what it read for the next branch.
type sizer struct {
	g      gitRunner
	limits Limits
	idLen  int      // hex digits of an object id
	own    []string // the host's own tips: what a branch brings is what they do not reach
	// Below, objects are named by their raw ids (half the bytes of hex,
	// and a tree's entries name them so).
	objects map[string]objInfo // every object read
	trees   map[string][]rawEntry
	shapes  map[string]shape
}

type objInfo struct {
	typ  string
	size int64
}

// rawEntry is an entry of a tree: its kind, name and raw id.
type rawEntry struct {
	kind     entryKind
	name, id string
}

type entryKind uint8

const (
	kindFile    entryKind = iota // a blob: a file or a symlink
	kindTree                     // a directory
	kindGitlink                  // a commit of another repository: an empty directory
)

// raw returns the raw id of a hex id (hex, already checked by git, when it
// is not one).
func raw(id string) string {
	b, err := hex.DecodeString(id)
	if err != nil {
		return id
	}
	return string(b)
}

func newSizer(g gitRunner, limits Limits, format string, own []string) *sizer {
	idLen := 40
	if format == "sha256" {
		idLen = 64
	}
	return &sizer{g: g, limits: limits, idLen: idLen, own: own, objects: map[string]objInfo{},
		trees: map[string][]rawEntry{}, shapes: map[string]shape{}}
}

// measure returns why the branch at tip is over a limit: its new objects,
// then their inflated sizes, then its new trees (only a branch within the
// first two has its trees read).
func (s *sizer) measure(ctx context.Context, tip string) ([]Reason, error) {
	var revs strings.Builder
	fmt.Fprintln(&revs, tip)
	for _, id := range s.own {
		fmt.Fprintln(&revs, "^"+id)
	}
	out, err := s.g.run(ctx, strings.NewReader(revs.String()), "rev-list", "--objects", "--stdin")
	if err != nil {
		return nil, fmt.Errorf("listing the new objects: %s", stderrLine(err))
	}
	// Each line is an id and, for a tree or blob, the path it was first
	// met at (git cuts a path at a newline).
	ids, names := []string{}, map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if len(l) < s.idLen {
			continue
		}
		id := raw(l[:s.idLen])
		ids = append(ids, id)
		if len(l) > s.idLen+1 {
			names[id] = l[s.idLen+1:]
		}
	}
	if len(ids) > s.limits.Objects {
		return []Reason{{Why: fmt.Sprintf("the branch brings %d new objects (limit %d)", len(ids), s.limits.Objects)}}, nil
	}
	if err := s.readInfo(ctx, ids); err != nil {
		return nil, err
	}
	var why []Reason
	var total int64
	var trees []string
	for _, id := range ids {
		o := s.objects[id]
		total += o.size
		if o.size > s.limits.ObjectSize {
			why = append(why, Reason{Path: shorten(names[id]), Why: fmt.Sprintf("a %s of %s once inflated (limit %s)", o.typ, bytesText(o.size), bytesText(s.limits.ObjectSize))})
		}
		if o.typ == "tree" {
			trees = append(trees, id)
		}
	}
	if total > s.limits.TotalSize {
		why = append(why, Reason{Why: fmt.Sprintf("its new objects come to %s once inflated (limit %s)", bytesText(total), bytesText(s.limits.TotalSize))})
	}
	if len(why) > 0 {
		return why, nil
	}
	if err := s.readBelow(ctx, trees); err != nil {
		return nil, err
	}
	return s.treeReasons(trees, names), nil
}

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
		switch e.kind {
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
		if e.kind != kindTree {
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

// shorten cuts a path longer than shownPath.
func shorten(p string) string {
	if len(p) <= shownPath {
		return p
	}
	return p[:shownPath] + "..."
}

// bytesText writes a size in MiB or GiB.
func bytesText(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
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
				case e.kind == kindTree && !read:
					seen[e.id] = true
					next = append(next, e.id)
				case e.kind == kindFile && !sized:
					seen[e.id] = true
					blobs = append(blobs, e.id)
				}
			}
		}
		want = next
	}
	return s.readInfo(ctx, blobs)
}

// readInfo reads the type and inflated size of the objects not read yet
// with one `git cat-file --batch-check` (which reads no content).
func (s *sizer) readInfo(ctx context.Context, ids []string) error {
	var want strings.Builder
	for _, id := range ids {
		if _, ok := s.objects[id]; !ok {
			fmt.Fprintln(&want, hex.EncodeToString([]byte(id)))
		}
	}
	if want.Len() == 0 {
		return nil
	}
	out, err := s.g.run(ctx, strings.NewReader(want.String()), "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)")
	if err != nil {
		return fmt.Errorf("reading the sizes of the new objects: %s", stderrLine(err))
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			return fmt.Errorf("unexpected git cat-file output %q", l)
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("unexpected git cat-file output %q", l)
		}
		s.objects[raw(f[0])] = objInfo{f[1], size}
	}
	return nil
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
		entries, err := parseRawTree(string(buf[:size]), s.idLen/2)
		if err != nil {
			return fmt.Errorf("tree %x: %w", id, err)
		}
		s.trees[id] = entries
	}
	return nil
}

// kindOf is what git takes a tree entry of mode m for: a tree may write a
// directory as 040000 (fsck only warns), and git takes any mode that is no
// file, link or directory for a gitlink.
func kindOf(m string) entryKind {
	n, err := strconv.ParseUint(m, 8, 32)
	if err != nil {
		return kindGitlink
	}
	switch n & 0o170000 {
	case 0o040000:
		return kindTree
	case 0o100000, 0o120000:
		return kindFile
	}
	return kindGitlink
}

// parseRawTree reads a tree object: entries of "MODE NAME\0" and a raw id of
// rawLen bytes. Names and ids are substrings of b.
func parseRawTree(b string, rawLen int) ([]rawEntry, error) {
	entries := make([]rawEntry, 0, strings.Count(b, "\x00"))
	for len(b) > 0 {
		sp := strings.IndexByte(b, ' ')
		nul := strings.IndexByte(b, 0)
		if sp < 0 || nul < sp || len(b) < nul+1+rawLen {
			return nil, fmt.Errorf("malformed tree entry")
		}
		entries = append(entries, rawEntry{kind: kindOf(b[:sp]), name: b[sp+1 : nul], id: b[nul+1 : nul+1+rawLen]})
		b = b[nul+1+rawLen:]
	}
	return entries, nil
}
