package gitgate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultPrefix is where accepted branches are written: the agent's branch
// feature/x becomes refs/heads/agentbox/feature/x.
const DefaultPrefix = "refs/heads/agentbox/"

// incoming is where the agent's branches wait while they are examined. Every
// ref below it is deleted when Fetch returns.
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
	Ref  string `json:"ref"`  // the destination: refs/heads/agentbox/feature/x
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
//  1. the bundle is fetched into a scratch repository (git 2.39 does not fsck
//     objects fetched straight from a bundle), and the host fetches from
//     that with fetch.fsckObjects, transfer.fsckObjects and
//     receive.fsckObjects on, into refs/agentbox-incoming/; fsck refuses
//     malformed objects, trees with .git entries and bad .gitmodules;
//  2. one `git log` pass reads every commit reachable from an incoming
//     branch and from no ref of the host's own (refs/agentbox-incoming/ and
//     the destination prefix are not the host's own);
//  3. a branch is refused, with every reason, when one of its commits adds or
//     changes a gitlink, changes a Protected path not in Policy.Writable or a
//     Policy.ReadOnly path or the host's core.hooksPath, has a .git path
//     component, has a directory git takes for a bare repository, or adds a
//     symlink that is absolute, climbs out of the
//     repository or leads into such a path; a branch whose destination is
//     checked out in a work tree is refused too (it is not moved);
//  4. accepted branches are written to Prefix+name with `git update-ref`,
//     forced (the destination belongs to the agent) but only from the value
//     read in step 2.
//
// Every ref below refs/agentbox-incoming/ is deleted before Fetch returns.
// No program, hook or configuration of the agent's repository is used: the
// bundle carries only objects and ref names.
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
	scratch, err := unbundle(ctx, h, bundle, filepath.Join(tmp, "scratch.git"))
	if err != nil {
		return nil, err
	}
	if err := deleteIncoming(ctx, h.git); err != nil { // left by an interrupted run
		return nil, err
	}
	res, err := fetchAndExamine(ctx, h, scratch, prefix, newRules(opts.Policy, h.hooksPath))
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if derr := deleteIncoming(cctx, h.git); derr != nil && err == nil {
		err = derr
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// fetchAndExamine fetches from the scratch repository with fsck, examines
// the incoming branches and writes the accepted ones.
func fetchAndExamine(ctx context.Context, h *host, scratch, prefix string, r rules) (*Result, error) {
	if _, err := h.git.run(ctx, nil, "-c", "fetch.fsckObjects=true", "-c", "transfer.fsckObjects=true", "-c", "receive.fsckObjects=true",
		"fetch", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head", "--no-auto-maintenance", "--quiet",
		scratch, "+refs/heads/*:"+incoming+"*"); err != nil {
		return nil, fmt.Errorf("checking the bundle's objects: %s", stderrLine(err))
	}
	res, err := examine(ctx, h.git, prefix, r)
	if err != nil {
		return nil, err
	}
	writeRefs(ctx, h.git, res)
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

// unbundle fetches the bundle's branches into a new bare scratch repository
// that borrows the host's objects (so that a bundle may leave out what the
// host has) and returns its path. Nothing is checked here: the host's fetch
// from the scratch repository checks everything.
func unbundle(ctx context.Context, h *host, bundle, scratch string) (string, error) {
	if _, err := h.git.run(ctx, nil, "init", "--quiet", "--bare", "--template=", "--object-format="+h.format, scratch); err != nil {
		return "", fmt.Errorf("creating a scratch repository: %s", stderrLine(err))
	}
	alt := filepath.Join(scratch, "objects", "info", "alternates")
	if err := os.MkdirAll(filepath.Dir(alt), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(alt, []byte(h.objects+"\n"), 0o644); err != nil {
		return "", err
	}
	s := newGit(scratch)
	heads, err := s.run(ctx, nil, "bundle", "list-heads", bundle)
	if err != nil {
		return "", fmt.Errorf("reading the bundle: %s", stderrLine(err))
	}
	n := 0
	for _, l := range strings.Split(string(heads), "\n") {
		if f := strings.Fields(l); len(f) == 2 && strings.HasPrefix(f[1], "refs/heads/") {
			n++
		}
	}
	if n == 0 {
		return "", errors.New("the bundle holds no branches")
	}
	if _, err := s.run(ctx, nil, "fetch", "--no-tags", "--no-write-fetch-head", "--no-auto-maintenance", "--quiet",
		bundle, "+refs/heads/*:refs/heads/*"); err != nil {
		return "", fmt.Errorf("reading the bundle: %s", stderrLine(err))
	}
	return scratch, nil
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
