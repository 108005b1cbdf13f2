package gitgate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// DefaultPrefix is where accepted branches are written: the agent's branch
// feature/x becomes refs/heads/agentbox/feature/x.
const DefaultPrefix = "refs/heads/agentbox/"

// incoming is where agentbox's fetch once kept the agent's branches while
// it examined them; Fetch deletes what an interrupted one left there, and
// refuses it as a prefix.
const incoming = "refs/agentbox-incoming/"

// FetchOptions say what to fetch, from where, into where.
type FetchOptions struct {
	// Dir is the host repository (its work tree or any directory in it).
	// Paths in Policy and Protected are relative to its top level.
	Dir string
	// Bundle is the path of a git bundle of the agent's branches; when it
	// is empty, BundleReader is read into a temporary file instead.
	Bundle       string
	BundleReader io.Reader
	// Prefix is the destination of accepted branches: a ref prefix ending
	// in "/" with at least three components (DefaultPrefix when empty).
	Prefix string
	Policy Policy
	// Limits bound what a branch may bring (DefaultLimits where zero).
	Limits Limits
}

// Status says what Fetch did with a branch.
type Status string

// The statuses of a branch.
const (
	StatusNew       Status = "new"       // the destination ref was created
	StatusUpdated   Status = "updated"   // the destination ref was moved
	StatusUnchanged Status = "unchanged" // the destination ref already pointed there
	StatusRefused   Status = "refused"   // not written; see the reasons
)

// Branch is what became of one branch of the bundle.
type Branch struct {
	Name string `json:"name"` // the agent's branch: feature/x
	Ref  string `json:"ref"`  // the destination: refs/heads/agentbox/feature/x; "" when the name is refused
	Old  string `json:"old"`  // the destination's commit before; "" when it did not exist
	New  string `json:"new"`  // the agent's commit
	// Commits counts the commits reachable from New and neither from Old
	// nor from the host's own refs.
	Commits int      `json:"commits"`
	Status  Status   `json:"status"`
	Reasons []Reason `json:"reasons"` // why it was refused; empty otherwise
}

// Reason is one cause of a refusal.
type Reason struct {
	Commit string `json:"commit,omitempty"` // the commit that makes the change, if one does
	Path   string `json:"path,omitempty"`
	Why    string `json:"why"`
}

// Result lists the bundle's branches, sorted by name.
type Result struct {
	Branches []Branch `json:"branches"`
}

// Refused counts the refused branches.
func (r *Result) Refused() int {
	n := 0
	for _, b := range r.Branches {
		if b.Status == StatusRefused {
			n++
		}
	}
	return n
}

// host is the repository fetched into.
type host struct {
	git       gitRunner // runs at the top level (the git directory when bare)
	objects   string    // absolute path of its object directory
	format    string    // object format: sha1 or sha256
	hooksPath []string  // core.hooksPath relative to the top level, as spelled and resolved, when it lies inside
}

// Fetch brings the branches of a bundle into the repository at opts.Dir:
//
//  1. the bundle is read into a scratch repository (git 2.39 does not fsck
//     objects fetched straight from a bundle); a branch whose name git could
//     not store or a terminal would not show as is, or that is listed twice,
//     is refused;
//  2. the host fetches the branches from there, with fetch.fsckObjects,
//     transfer.fsckObjects and receive.fsckObjects on, into a quarantine
//     object directory: fsck refuses malformed objects, trees with .git
//     entries and bad .gitmodules, and when it does, each branch is fetched
//     on its own and those it refuses are refused;
//  3. a branch over one of the Limits is refused (its new objects, their
//     inflated sizes, the entries of its trees, and the depth and length of
//     the paths, the files and their bytes of a checkout of each new tree);
//  4. one `git log` pass reads every commit reachable from a branch left
//     and from no ref of the host's own (the destination prefix is not the
//     host's own);
//  5. a branch is refused, with every reason, when one of its commits adds or
//     changes a gitlink, changes a Protected path not in Policy.Writable or a
//     Policy.ReadOnly path or the host's core.hooksPath, has a .git path
//     component, has a directory git takes for a bare repository, or adds a
//     symlink that is absolute, climbs out of the
//     repository or leads into such a path; a branch whose destination is
//     checked out in a work tree is refused too (it is not moved);
//  6. the host fetches the accepted branches into its own object store, with
//     fsck on (or, when every branch was accepted, the quarantine's pack is
//     moved in), and writes them to Prefix+name with `git update-ref`,
//     forced (the destination belongs to the agent) but only from the value
//     read in step 4.
//
// The scratch repository and the quarantine are deleted before Fetch
// returns (the quarantine lies in the host's object directory; one an
// interrupted Fetch left is deleted by the next): a refused branch leaves
// no object in the host's repository. No program, hook or configuration
// of the agent's repository is used: the bundle carries only objects and
// ref names.
func Fetch(ctx context.Context, opts FetchOptions) (*Result, error) {
	if err := opts.Policy.Validate(); err != nil {
		return nil, err
	}
	prefix, err := checkPrefix(ctx, opts.Prefix)
	if err != nil {
		return nil, err
	}
	h, err := openHost(ctx, opts.Dir)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "agentbox-fetch-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bundle, err := bundleFile(opts, tmp)
	if err != nil {
		return nil, err
	}
	if err := deleteIncoming(ctx, h.git); err != nil { // left by an agentbox before the quarantine
		return nil, err
	}
	s, heads, err := unbundle(ctx, h, bundle, filepath.Join(tmp, "scratch.git"))
	if err != nil {
		return nil, err
	}
	limits := opts.Limits.orDefault()
	checkNames(heads, limits.NameBytes)
	if err := scratchRefs(ctx, s, heads); err != nil {
		return nil, err
	}
	q, err := newQuarantine(h)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(q.dir)
	if err := q.fetch(ctx, s.dir, heads); err != nil {
		return nil, fmt.Errorf("checking the bundle's objects: %s", stderrLine(err))
	}
	rs, err := readRefs(ctx, q.git, prefix)
	if err != nil {
		return nil, err
	}
	trees := treeCache{}
	if err := measureBranches(ctx, newSizer(q.git, limits, h.format, rs.own, trees), heads); err != nil {
		return nil, err
	}
	return judgeAndWrite(ctx, h, q, s.dir, rs, heads, prefix, newRules(opts.Policy, h.hooksPath), trees)
}

// judgeAndWrite applies the rules to the branches still open, in the
// quarantine, brings the accepted ones into the host's object store and
// writes them.
// trees holds the trees the sizer read.
func judgeAndWrite(ctx context.Context, h *host, q *quarantine, scratch string, rs *refs, heads []*head, prefix string, r rules, trees treeCache) (*Result, error) {
	res := &Result{}
	byName := map[string]*head{}
	if pending := open(heads); len(pending) > 0 {
		for _, hd := range pending {
			rs.incoming[hd.name] = object{hd.id, hd.typ}
			byName[hd.name] = hd
		}
		var err error
		if res, err = examine(ctx, q.git, rs, prefix, r, trees); err != nil {
			return nil, err
		}
	}
	var accepted []*head
	for _, b := range res.Branches {
		if b.Status == StatusNew || b.Status == StatusUpdated {
			accepted = append(accepted, byName[b.Name])
		}
	}
	// When every branch the quarantine holds was accepted, its pack is
	// moved in; otherwise the host fetches the accepted ones again.
	moved := false
	if res.Refused() == 0 {
		var err error
		if moved, err = q.migrate(h.objects); err != nil {
			return nil, err
		}
	}
	if len(accepted) > 0 && !moved {
		if err := fetchBranches(ctx, h.git, scratch, accepted); err != nil {
			return nil, fmt.Errorf("bringing the accepted branches into the repository: %s", stderrLine(err))
		}
	}
	writeRefs(ctx, h.git, res)
	for _, hd := range heads {
		if len(hd.reasons) == 0 {
			continue
		}
		b := Branch{Name: hd.name, New: hd.id, Status: StatusRefused, Reasons: hd.reasons}
		if !hd.badName {
			b.Ref = prefix + hd.name
			b.Old = rs.dest[b.Ref].id
		}
		res.Branches = append(res.Branches, b)
	}
	sort.SliceStable(res.Branches, func(i, j int) bool { return res.Branches[i].Name < res.Branches[j].Name })
	return res, nil
}

// checkPrefix applies the default and refuses a prefix that would mix the
// agent's branches with the host's: refs/heads/ alone would let fetch move
// the user's own branches.
func checkPrefix(ctx context.Context, p string) (string, error) {
	if p == "" {
		return DefaultPrefix, nil
	}
	bad := func(why string) error {
		return fmt.Errorf("invalid destination prefix %q: %s; use one such as %s", p, why, DefaultPrefix)
	}
	switch {
	case !strings.HasPrefix(p, "refs/") || !strings.HasSuffix(p, "/"):
		return "", bad("want a ref prefix that starts with refs/ and ends in /")
	case strings.Count(p, "/") < 3:
		return "", bad("want a namespace of the agent's own, below refs/heads/ or another one")
	case strings.HasPrefix(p, incoming) || strings.HasPrefix(incoming, p):
		return "", bad("it overlaps " + incoming)
	}
	if _, err := newGit(".").run(ctx, nil, "check-ref-format", p+"branch"); err != nil {
		return "", bad("not a valid ref name")
	}
	return p, nil
}

// openHost finds the repository at dir.
func openHost(ctx context.Context, dir string) (*host, error) {
	g := newGit(dir)
	out, err := g.run(ctx, nil, "rev-parse", "--is-bare-repository", "--show-object-format", "--path-format=absolute", "--git-path", "objects")
	if err != nil {
		return nil, fmt.Errorf("%s is not a git repository: %s", dir, stderrLine(err))
	}
	f := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(f) != 3 {
		return nil, fmt.Errorf("unexpected git rev-parse output %q", out)
	}
	h := &host{git: g, format: f[1], objects: f[2]}
	if f[0] == "false" {
		out, err := g.run(ctx, nil, "rev-parse", "--show-toplevel")
		if err != nil {
			return nil, fmt.Errorf("finding the top of the work tree of %s: %s", dir, stderrLine(err))
		}
		top := strings.TrimSpace(string(out))
		h.git = newGit(top)
		h.hooksPath = hooksPathIn(ctx, h.git, top)
	}
	return h, nil
}

// TopLevel returns the top directory of the work tree that holds dir.
func TopLevel(ctx context.Context, dir string) (string, error) {
	out, err := newGit(dir).run(ctx, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("%s is not in a git work tree: %s", dir, stderrLine(err))
	}
	return strings.TrimSpace(string(out)), nil
}

// bundleFile returns the bundle's absolute path, writing BundleReader to tmp
// when no path was given.
func bundleFile(opts FetchOptions, tmp string) (string, error) {
	if opts.Bundle != "" {
		return filepath.Abs(opts.Bundle)
	}
	if opts.BundleReader == nil {
		return "", errors.New("no bundle given")
	}
	f, err := os.Create(filepath.Join(tmp, "agent.bundle"))
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, opts.BundleReader); err != nil {
		f.Close()
		return "", fmt.Errorf("reading the bundle: %w", err)
	}
	return f.Name(), f.Close()
}

// deleteIncoming deletes every ref below refs/agentbox-incoming/.
func deleteIncoming(ctx context.Context, g gitRunner) error {
	out, err := g.run(ctx, nil, "for-each-ref", "--format=delete %(refname)", incoming)
	if err != nil {
		return fmt.Errorf("listing %s: %s", incoming, stderrLine(err))
	}
	if len(out) == 0 {
		return nil
	}
	if _, err := g.run(ctx, strings.NewReader(string(out)), "update-ref", "--no-deref", "--stdin"); err != nil {
		return fmt.Errorf("deleting %s: %s", incoming, stderrLine(err))
	}
	return nil
}
