package gitgate

import (
	"context"
	"encoding/hex"
	"fmt"
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
	trees   treeCache
	shapes  map[string]shape
}

type objInfo struct {
	typ  string
	size int64
}

// raw returns the raw id of a hex id (hex, already checked by git, when it
// is not one).
func raw(id string) string {
	b, err := hex.DecodeString(id)
	if err != nil {
		return id
	}
	return string(b)
}

func newSizer(g gitRunner, limits Limits, format string, own []string, trees treeCache) *sizer {
	idLen := 40
	if format == "sha256" {
		idLen = 64
	}
	return &sizer{g: g, limits: limits, idLen: idLen, own: own, objects: map[string]objInfo{},
		trees: trees, shapes: map[string]shape{}}
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
