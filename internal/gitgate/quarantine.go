package gitgate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The agent's objects pass through two repositories of Fetch's own before
// any reaches the host's:
//
//   - the scratch repository, a bare repository that borrows the host's
//     objects (a bundle may leave out what the host has), takes the
//     bundle's pack unchecked and keeps each branch as refs/b/N;
//   - the quarantine, an object directory that the host's git writes to
//     instead of its own (GIT_OBJECT_DIRECTORY, with the host's objects as
//     an alternate, as git's receive-pack does): the host fetches each
//     branch from the scratch repository into it with fsck on, and
//     everything is examined there, against the host's refs.
//
// Only then do the accepted branches enter the host's object store: the
// quarantine's pack is moved in when it holds accepted branches only, and
// otherwise the host fetches them, with fsck on again. A refused branch
// leaves nothing there.

// head is one branch the bundle lists.
type head struct {
	n       int    // its place among the bundle's branches, from 1
	name    string // the agent's name for it, as the bundle spells it
	id      string // its tip
	typ     string // the tip's type
	badName bool   // the name is refused: it has no destination
	reasons []Reason
}

// scratchRef is where the scratch repository keeps the branch.
func (hd *head) scratchRef() string { return "refs/b/" + strconv.Itoa(hd.n) }

// refuse refuses the branch before the rules see it.
func (hd *head) refuse(why string) { hd.reasons = append(hd.reasons, Reason{Why: why}) }

// unbundle reads the bundle into a new scratch repository and returns it
// and the bundle's branches. Nothing is checked here.
func unbundle(ctx context.Context, h *host, bundle, scratch string) (gitRunner, []*head, error) {
	if _, err := h.git.run(ctx, nil, "init", "--quiet", "--bare", "--template=", "--object-format="+h.format, scratch); err != nil {
		return gitRunner{}, nil, fmt.Errorf("creating a scratch repository: %s", stderrLine(err))
	}
	alt := filepath.Join(scratch, "objects", "info", "alternates")
	if err := os.MkdirAll(filepath.Dir(alt), 0o755); err != nil {
		return gitRunner{}, nil, err
	}
	if err := os.WriteFile(alt, []byte(h.objects+"\n"), 0o644); err != nil {
		return gitRunner{}, nil, err
	}
	s := newGit(scratch)
	out, err := s.run(ctx, nil, "bundle", "unbundle", bundle)
	if err != nil {
		return gitRunner{}, nil, fmt.Errorf("reading the bundle: %s", stderrLine(err))
	}
	var heads []*head
	for _, l := range strings.Split(string(out), "\n") {
		id, ref, ok := strings.Cut(l, " ")
		if name, isBranch := strings.CutPrefix(ref, "refs/heads/"); ok && isBranch {
			heads = append(heads, &head{n: len(heads) + 1, name: name, id: id})
		}
	}
	if len(heads) == 0 {
		return gitRunner{}, nil, errors.New("the bundle holds no branches")
	}
	return s, heads, nil
}

// checkNames refuses the branches whose name git could not store or the
// user's terminal would not show as it is, and names listed twice.
func checkNames(heads []*head, max int) {
	count := map[string]int{}
	for _, hd := range heads {
		count[hd.name]++
	}
	for _, hd := range heads {
		what, bad := "", true
		switch {
		case len(hd.name) > max:
			what = fmt.Sprintf("is %d bytes long, longer than %d", len(hd.name), max)
		case !printableName(hd.name):
			what = "holds a character that is not printable (a control, a format character such as a bidi override, or invalid UTF-8)"
		case !validRefName("refs/heads/" + hd.name):
			what = "is not a valid branch name (git check-ref-format)"
		case count[hd.name] > 1:
			what, bad = "is listed more than once in the bundle", false
		default:
			continue
		}
		hd.badName = bad
		hd.refuse(fmt.Sprintf("%s: its name %s; rename or delete it there (git branch -m, git branch -D)", hd.label(), what))
	}
}

// label names the branch without its name (which Branch.Name holds, and
// which may be long or hostile): its place in the agent's clone.
func (hd *head) label() string {
	return fmt.Sprintf("the agent's clone's branch #%d (in the order of git for-each-ref refs/heads/)", hd.n)
}

// printableName reports whether name is UTF-8 of printable characters
// only.
func printableName(name string) bool {
	if !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// validRefName applies git's rules for ref names (git check-ref-format,
// without --allow-onelevel or --refspec-pattern).
func validRefName(ref string) bool {
	if ref == "@" || strings.HasSuffix(ref, "/") || strings.HasSuffix(ref, ".") ||
		strings.Contains(ref, "..") || strings.Contains(ref, "@{") || strings.Contains(ref, "//") ||
		strings.Count(ref, "/") < 1 {
		return false
	}
	for _, c := range strings.Split(ref, "/") {
		if c == "" || c[0] == '.' || strings.HasSuffix(c, ".lock") {
			return false
		}
	}
	for i := 0; i < len(ref); i++ {
		if b := ref[i]; b < 0x20 || b == 0x7f || strings.IndexByte(" ~^:?*[\\", b) >= 0 {
			return false
		}
	}
	return true
}

// scratchRefs refuses the branches whose tip the scratch repository lacks
// and stores the others as refs/b/N.
func scratchRefs(ctx context.Context, s gitRunner, heads []*head) error {
	pending := open(heads)
	if len(pending) == 0 {
		return nil
	}
	var ids strings.Builder
	for _, hd := range pending {
		fmt.Fprintln(&ids, hd.id)
	}
	out, err := s.run(ctx, strings.NewReader(ids.String()), "cat-file", "--batch-check=%(objecttype)")
	if err != nil {
		return fmt.Errorf("reading the bundle's branches: %s", stderrLine(err))
	}
	types := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(types) != len(pending) {
		return fmt.Errorf("unexpected git cat-file output %q", out)
	}
	var update strings.Builder
	for i, hd := range pending {
		if strings.HasSuffix(types[i], " missing") || types[i] == "missing" {
			hd.refuse(fmt.Sprintf("its tip %s is not in the bundle", hd.id))
			continue
		}
		hd.typ = types[i]
		fmt.Fprintf(&update, "create %s %s\n", hd.scratchRef(), hd.id)
	}
	if _, err := s.run(ctx, strings.NewReader(update.String()), "update-ref", "--stdin"); err != nil {
		return fmt.Errorf("storing the bundle's branches: %s", stderrLine(err))
	}
	return nil
}

// open returns the branches not refused yet.
func open(heads []*head) []*head {
	var o []*head
	for _, hd := range heads {
		if len(hd.reasons) == 0 {
			o = append(o, hd)
		}
	}
	return o
}

// fsckArgs fetch with git's fsck on every object received.
var fsckArgs = []string{"-c", "fetch.fsckObjects=true", "-c", "transfer.fsckObjects=true", "-c", "receive.fsckObjects=true",
	"-c", "fetch.writeCommitGraph=false"}

// fetchBranches fetches the branches from the scratch repository into g's
// object store, without writing any ref, with fsck on.
func fetchBranches(ctx context.Context, g gitRunner, scratch string, heads []*head, extra ...string) error {
	var refs strings.Builder
	for _, hd := range heads {
		fmt.Fprintln(&refs, hd.scratchRef())
	}
	args := append(append(append([]string{}, fsckArgs...), extra...), "fetch", "--stdin", "--no-tags",
		"--no-recurse-submodules", "--no-write-fetch-head", "--no-auto-maintenance", "--quiet", scratch)
	_, err := g.run(ctx, strings.NewReader(refs.String()), args...)
	return err
}

// quarantinePattern names the quarantines in the host's object directory
// (on its file system, so that a pack moves into the object store with a
// rename).
const quarantinePattern = "agentbox-quarantine-*"

// quarantine is an object directory the host's git writes to instead of its
// own.
type quarantine struct {
	dir string
	git gitRunner // the host's git, writing to dir and reading the host's objects through it
	// whole lists the branches when one fetch brought them all in: the
	// quarantine then holds one pack of their objects and nothing else.
	whole []*head
}

// newQuarantine makes a quarantine in the host's object directory, after
// removing those an interrupted Fetch left.
func newQuarantine(h *host) (*quarantine, error) {
	old, _ := filepath.Glob(filepath.Join(h.objects, quarantinePattern))
	for _, d := range old {
		if err := os.RemoveAll(d); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp(h.objects, quarantinePattern)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"pack", "info"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	return &quarantine{dir: dir, git: h.git.with("GIT_OBJECT_DIRECTORY="+dir, "GIT_ALTERNATE_OBJECT_DIRECTORIES="+h.objects)}, nil
}

// fetch fetches the open branches into the quarantine. When fsck refuses
// the fetch of them all, each is fetched on its own, and those fsck refuses
// are refused (a refused fetch leaves no object: every fetch keeps its pack
// whole, transfer.unpackLimit=1, and git deletes a pack that fails).
func (q *quarantine) fetch(ctx context.Context, scratch string, heads []*head) error {
	pending := open(heads)
	if len(pending) == 0 {
		return nil
	}
	one := []string{"-c", "fetch.unpackLimit=1", "-c", "transfer.unpackLimit=1"}
	if err := fetchBranches(ctx, q.git, scratch, pending, one...); err == nil || ctx.Err() != nil {
		if err == nil {
			q.whole = pending
		}
		return err
	}
	for _, hd := range pending {
		err := fetchBranches(ctx, q.git, scratch, []*head{hd}, one...)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			hd.refuse("git's fsck refuses its objects (" + stderrLine(err) + "); the host cannot take it: rewrite or delete the branch in the agent's clone")
		}
	}
	return nil
}

// migrate moves the quarantine's packs into the host's object store, each
// index after its pack (git sees a pack when its index appears), and
// reports whether it did. It does not unless the quarantine holds the
// objects of accepted branches only: one fetch brought them in, and none
// of them is refused.
func (q *quarantine) migrate(objects string) (bool, error) {
	if len(q.whole) == 0 || len(open(q.whole)) != len(q.whole) {
		return false, nil
	}
	var moves [][2]string
	for _, d := range []string{".", "pack", "info"} {
		entries, err := os.ReadDir(filepath.Join(q.dir, d))
		if err != nil {
			return false, err
		}
		for _, e := range entries {
			name := e.Name()
			switch {
			case d == "." && (name == "pack" || name == "info"):
			case d == "pack" && strings.HasPrefix(name, "pack-") &&
				(strings.HasSuffix(name, ".pack") || strings.HasSuffix(name, ".rev") || strings.HasSuffix(name, ".idx")):
				moves = append(moves, [2]string{filepath.Join(q.dir, d, name), filepath.Join(objects, "pack", name)})
			default:
				return false, nil
			}
		}
	}
	rank := func(p string) int { return strings.Index(".pack.rev.idx", filepath.Ext(p)) }
	sort.Slice(moves, func(i, j int) bool { return rank(moves[i][0]) < rank(moves[j][0]) })
	for _, m := range moves {
		if err := os.Rename(m[0], m[1]); err != nil {
			return false, fmt.Errorf("moving the accepted objects into the repository: %w", err)
		}
	}
	return true, nil
}

// measureBranches refuses the open branches over a limit.
func measureBranches(ctx context.Context, sz *sizer, heads []*head) error {
	for _, hd := range open(heads) {
		why, err := sz.measure(ctx, hd.id)
		if err != nil {
			return err
		}
		hd.reasons = append(hd.reasons, why...)
	}
	return nil
}
