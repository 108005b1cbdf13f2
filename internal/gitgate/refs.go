package gitgate

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// refs is what the host's refs say before anything is written.
type refs struct {
	incoming   map[string]object // branch name -> the agent's tip (the caller's)
	dest       map[string]object // destination ref -> its object
	own        []string          // objects of the host's own refs
	checkedOut map[string]string // ref -> the work tree that has it checked out
}

type object struct{ id, typ string }

func readRefs(ctx context.Context, g gitRunner, prefix string) (*refs, error) {
	out, err := g.run(ctx, nil, "for-each-ref", "--format=%(objectname) %(objecttype) %(refname)")
	if err != nil {
		return nil, fmt.Errorf("listing refs: %s", stderrLine(err))
	}
	rs := &refs{incoming: map[string]object{}, dest: map[string]object{}, checkedOut: map[string]string{}}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(l, " ", 3)
		if len(f) != 3 {
			continue
		}
		o := object{f[0], f[1]}
		switch name := f[2]; {
		case strings.HasPrefix(name, incoming): // deleted before
		case strings.HasPrefix(name, prefix):
			rs.dest[name] = o
		default:
			rs.own = append(rs.own, o.id)
		}
	}
	out, err = g.run(ctx, nil, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, fmt.Errorf("listing work trees: %s", stderrLine(err))
	}
	var wt string
	for _, l := range strings.Split(string(out), "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok {
			wt = p
		} else if ref, ok := strings.CutPrefix(l, "branch "); ok {
			rs.checkedOut[ref] = wt
		}
	}
	return rs, nil
}

// examine reads the new commits of every incoming branch in one `git log`
// pass and decides each branch's fate; writeRefs carries it out.
func examine(ctx context.Context, g gitRunner, rs *refs, prefix string, r rules, cache treeCache) (*Result, error) {
	if len(rs.incoming) == 0 {
		return nil, fmt.Errorf("the bundle holds no branches")
	}
	commits, err := newCommits(ctx, g, rs, prefix)
	if err != nil {
		return nil, err
	}
	bad, err := judge(ctx, g, commits, r, cache)
	if err != nil {
		return nil, err
	}
	graph := map[string][]string{}
	for _, c := range commits {
		graph[c.id] = c.parents
	}
	res := &Result{}
	for name, in := range rs.incoming {
		res.Branches = append(res.Branches, decide(name, in, rs, prefix, commits, graph, bad))
	}
	sort.Slice(res.Branches, func(i, j int) bool { return res.Branches[i].Name < res.Branches[j].Name })
	return res, nil
}

// newCommits reads, with their changes, the commits reachable from an
// incoming branch or its current destination and from no ref of the host's
// own. (The destinations are walked so that Commits can leave out what they
// already had.)
func newCommits(ctx context.Context, g gitRunner, rs *refs, prefix string) ([]commit, error) {
	var revs strings.Builder
	for name, in := range rs.incoming {
		if in.typ == "commit" {
			fmt.Fprintln(&revs, in.id)
		}
		if old, ok := rs.dest[prefix+name]; ok && old.typ == "commit" {
			fmt.Fprintln(&revs, old.id)
		}
	}
	for _, id := range rs.own {
		fmt.Fprintln(&revs, "^"+id)
	}
	out, err := g.run(ctx, strings.NewReader(revs.String()), logArgs...)
	if err != nil {
		return nil, fmt.Errorf("reading the new commits: %s", stderrLine(err))
	}
	return parseLog(out)
}

// decide makes the Branch of incoming branch name: every reason of the new
// commits it reaches, in log order, and its status.
func decide(name string, in object, rs *refs, prefix string, commits []commit, graph map[string][]string, bad map[string][]Reason) Branch {
	b := Branch{Name: name, Ref: prefix + name, New: in.id, Reasons: []Reason{}}
	old, exists := rs.dest[b.Ref]
	if exists {
		b.Old = old.id
	}
	if in.typ != "commit" {
		b.Reasons = append(b.Reasons, Reason{Why: fmt.Sprintf("the branch points to a %s, not a commit", in.typ)})
	}
	mine, before := reach(graph, in.id), reach(graph, b.Old)
	for id := range mine {
		if !before[id] {
			b.Commits++
		}
	}
	for _, c := range commits {
		if mine[c.id] {
			b.Reasons = append(b.Reasons, bad[c.id]...)
		}
	}
	if wt := rs.checkedOut[b.Ref]; wt != "" && b.Old != b.New {
		b.Reasons = append(b.Reasons, Reason{Why: fmt.Sprintf("%s is checked out in %s: fetch does not move it", b.Ref, wt)})
	}
	switch {
	case len(b.Reasons) > 0:
		b.Status = StatusRefused
	case b.Old == b.New:
		b.Status = StatusUnchanged
	case !exists:
		b.Status = StatusNew
	default:
		b.Status = StatusUpdated
	}
	return b
}

// judge returns the reasons each commit refuses its branches for.
func judge(ctx context.Context, g gitRunner, commits []commit, r rules, cache treeCache) (map[string][]Reason, error) {
	r, treeBad, err := judgeTrees(ctx, g, commits, r, cache)
	if err != nil {
		return nil, err
	}
	var blobs []string
	seen := map[string]bool{}
	for _, c := range commits {
		for _, ch := range c.changes {
			if ch.mode == modeSymlink && !seen[ch.blob] {
				seen[ch.blob] = true
				blobs = append(blobs, ch.blob)
			}
		}
	}
	targets, err := readTargets(ctx, g, blobs)
	if err != nil {
		return nil, err
	}
	bad := map[string][]Reason{}
	for _, c := range commits {
		for _, ch := range c.changes {
			why := r.changeReasons(ch)
			if ch.mode == modeSymlink {
				switch t, ok := targets[ch.blob]; {
				case !ok:
					why = append(why, "symlink whose target git cannot read")
				case t.tooLong:
					why = append(why, fmt.Sprintf("symlink with a target longer than %d bytes", maxTarget))
				default:
					why = append(why, r.symlinkReasons(ch.path, t.target)...)
				}
			}
			for _, w := range why {
				bad[c.id] = append(bad[c.id], Reason{Commit: c.id, Path: ch.path, Why: w})
			}
		}
	}
	for id, reasons := range treeBad {
		bad[id] = append(bad[id], reasons...)
	}
	return bad, nil
}

// reach returns the commits of graph reachable from tip (tip included, when
// it is in graph).
func reach(graph map[string][]string, tip string) map[string]bool {
	seen := map[string]bool{}
	stack := []string{tip}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		parents, ok := graph[id]
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		stack = append(stack, parents...)
	}
	return seen
}

// writeRefs writes the branches examine accepted, each from the value it
// read: a destination that moved in between is refused, not overwritten.
func writeRefs(ctx context.Context, g gitRunner, res *Result) {
	for i := range res.Branches {
		b := &res.Branches[i]
		if b.Status != StatusNew && b.Status != StatusUpdated {
			continue
		}
		if _, err := g.run(ctx, nil, "update-ref", "--no-deref", "-m", "agentbox fetch", b.Ref, b.New, b.Old); err != nil {
			b.Status = StatusRefused
			b.Reasons = append(b.Reasons, Reason{Why: fmt.Sprintf("writing %s: %s", b.Ref, stderrLine(err))})
		}
	}
}
