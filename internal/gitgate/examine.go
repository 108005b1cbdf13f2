package gitgate

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// logFormat starts each commit of `git log -z` with a byte no header token
// of git's raw output starts with.
const logFormat = "--format=%x01%H %T %P"

// logArgs are the arguments of the one `git log` pass over the new commits.
// Each option pins what user configuration could change: a merge lists the
// paths whose result differs from every parent (--diff-merges=combined: what
// a merge takes from a parent was examined in that parent's history, or is
// the host's own); gitlinks are never hidden (diff.ignoreSubmodules); paths
// are the repository's, not the current directory's (diff.relative); no
// signature is handed to gpg (log.showSignature).
var logArgs = []string{"log", "--stdin", "-z", "--raw", "--no-abbrev", "--no-renames",
	"--diff-merges=combined", "--root", "--ignore-submodules=none", "--no-relative",
	"--no-textconv", "--no-ext-diff", "--no-show-signature", "--no-color", logFormat}

// commit is one commit of the log with the paths it changes.
type commit struct {
	id      string
	tree    string
	parents []string
	changes []change
}

// change is one raw diff line: a path whose result differs from every parent.
type change struct {
	mode string // the result's mode; "000000" when the path is deleted
	blob string // the result's object id
	path string
}

// Modes of git tree entries.
const (
	modeSymlink = "120000"
	modeGitlink = "160000"
)

// parseLog reads the output of `git log logArgs`. With -z every token ends
// in a NUL; a header or a raw line may start with a newline; the token after
// a raw line is its path, whatever bytes it holds.
func parseLog(out []byte) ([]commit, error) {
	var commits []commit
	var pending *change
	for _, tok := range bytes.Split(out, []byte{0}) {
		if pending != nil {
			if len(tok) == 0 {
				return nil, fmt.Errorf("git log output has an empty path after %q", pending.blob)
			}
			pending.path = string(tok)
			c := &commits[len(commits)-1]
			c.changes = append(c.changes, *pending)
			pending = nil
			continue
		}
		t := strings.TrimLeft(string(tok), "\n")
		switch {
		case t == "":
		case t[0] == '\x01':
			f := strings.Fields(t[1:])
			if len(f) < 2 {
				return nil, fmt.Errorf("unexpected git log header %q", t)
			}
			commits = append(commits, commit{id: f[0], tree: f[1], parents: f[2:]})
		case t[0] == ':' && len(commits) > 0:
			ch, err := parseRaw(t)
			if err != nil {
				return nil, err
			}
			pending = &ch
		default:
			return nil, fmt.Errorf("unexpected git log output %q", t)
		}
	}
	if pending != nil {
		return nil, fmt.Errorf("git log output ends without the path of %q", pending.blob)
	}
	return commits, nil
}

// parseRaw reads ":SRCMODE DSTMODE SRC DST STATUS" or, for a merge of N
// parents, N colons, N+1 modes, N+1 object ids and the statuses.
func parseRaw(t string) (change, error) {
	n := len(t) - len(strings.TrimLeft(t, ":"))
	f := strings.Fields(t[n:])
	if len(f) != 2*n+3 {
		return change{}, fmt.Errorf("unexpected git log raw line %q", t)
	}
	return change{mode: f[n], blob: f[2*n+1]}, nil
}

// rules decide which changes refuse a branch.
type rules struct {
	writable, readOnly [][]string
	hooksPaths         [][]string // the host's hooks directory inside the work tree, as spelled and resolved
	// moved are further places the user's trees and work tree protect
	// (withUserTrees): protected paths their links lead to, repository
	// look-alikes they already have.
	moved []place
	// ways are the paths on the way to a protected path through the
	// user's links, by foldKey: a file or link there moves it.
	ways map[string]string
}

func newRules(p Policy, hooksPaths []string) rules {
	r := rules{}
	for _, h := range hooksPaths {
		r.hooksPaths = append(r.hooksPaths, split(h))
	}
	for _, w := range p.Writable {
		r.writable = append(r.writable, split(w))
	}
	for _, ro := range p.ReadOnly {
		r.readOnly = append(r.readOnly, split(ro))
	}
	return r
}

// pathReasons says why a change to p is refused, if it is.
func (r rules) pathReasons(p string) []string {
	comps := split(p)
	var why []string
	for _, c := range comps {
		if isDotGit(c) {
			why = append(why, fmt.Sprintf("a path component is %q, git's own directory", c))
			break
		}
	}
	if i, ok := protectedEntry(comps); ok && !r.anyUnder(comps, r.writable) {
		why = append(why, fmt.Sprintf("protected path %s: %s", Protected[i].Path, Protected[i].Why))
	}
	for _, ro := range r.readOnly {
		if under(comps, ro) {
			why = append(why, fmt.Sprintf("read-only path %s (workspace.readonly)", strings.Join(ro, "/")))
		}
	}
	for _, h := range r.hooksPaths {
		if len(h) > 0 && under(comps, h) {
			why = append(why, fmt.Sprintf("the host's hooks directory %s (core.hooksPath, or .git/hooks linked there): git runs these programs", strings.Join(h, "/")))
			break
		}
	}
	return append(why, r.movedReasons(comps, why)...)
}

func (r rules) anyUnder(comps []string, entries [][]string) bool {
	for _, e := range entries {
		if under(comps, e) {
			return true
		}
	}
	return false
}

// changeReasons says why ch is refused, apart from a symlink's target.
func (r rules) changeReasons(ch change) []string {
	why := r.pathReasons(ch.path)
	if w, ok := r.ways[foldKey(split(ch.path))]; ok {
		why = append(why, w)
	}
	if ch.mode == modeGitlink {
		why = append(why, "adds or changes a gitlink (a submodule commit): git would fetch and check out another repository on the host")
	}
	return why
}

// symlinkReasons says why a symlink at link with target is refused: it is
// absolute, climbs out of the repository, or leads into a path whose change
// would be refused.
func (r rules) symlinkReasons(link, target string) []string {
	switch {
	case target == "" || strings.ContainsRune(target, 0):
		return []string{fmt.Sprintf("symlink with the target %q", target)}
	case target[0] == '/' || target[0] == '\\' || (len(target) > 1 && target[1] == ':'):
		return []string{fmt.Sprintf("symlink to the absolute path %q", target)}
	}
	at := split(link)
	if len(at) > 0 {
		at = at[:len(at)-1] // the link's directory
	}
	named := false
	for _, c := range split(target) {
		switch {
		case c == ".":
		case c == ".." && named:
			// "a/../.." is not "..": if a is itself a link, the walk
			// climbs from wherever a leads.
			return []string{fmt.Sprintf("symlink to %q: a .. after a name may climb through another link", target)}
		case c == "..":
			if len(at) == 0 {
				return []string{fmt.Sprintf("symlink to %q climbs out of the repository", target)}
			}
			at = at[:len(at)-1]
		default:
			at, named = append(at, c), true
		}
	}
	if len(at) == 0 {
		return nil
	}
	var why []string
	for _, w := range r.pathReasons(strings.Join(at, "/")) {
		why = append(why, fmt.Sprintf("symlink to %q, into a path fetch protects: %s", target, w))
	}
	return why
}

// maxTarget is the longest symlink target read; a longer one is refused.
const maxTarget = 4096

// linkTarget is what a symlink blob holds, as far as it was read.
type linkTarget struct {
	target  string
	tooLong bool // longer than maxTarget: not read
}

// readTargets reads the blobs of symlinks with one `git cat-file --batch`. A
// blob git does not have is left out of the map.
func readTargets(ctx context.Context, g gitRunner, blobs []string) (map[string]linkTarget, error) {
	targets := map[string]linkTarget{}
	if len(blobs) == 0 {
		return targets, nil
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := g.stream(ctx, strings.NewReader(strings.Join(blobs, "\n")+"\n"), pw, "cat-file", "--batch")
		pw.CloseWithError(err)
		done <- err
	}()
	err := readBatch(bufio.NewReader(pr), blobs, targets)
	pr.CloseWithError(io.ErrClosedPipe) // stops git if we stopped reading early
	if gerr := <-done; err == nil {
		err = gerr
	}
	if err != nil {
		return nil, fmt.Errorf("reading symlink targets: %w", err)
	}
	return targets, nil
}

// readBatch reads `git cat-file --batch` answers for blobs, in order.
func readBatch(br *bufio.Reader, blobs []string, targets map[string]linkTarget) error {
	for _, b := range blobs {
		header, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		f := strings.Fields(header)
		if len(f) == 2 && f[0] == b && f[1] == "missing" {
			continue
		}
		var size int64
		if len(f) == 3 && f[0] == b {
			size, err = strconv.ParseInt(f[2], 10, 64)
		}
		if len(f) != 3 || f[0] != b || err != nil || size < 0 {
			return fmt.Errorf("unexpected git cat-file output %q", header)
		}
		if size > maxTarget {
			if _, err := io.CopyN(io.Discard, br, size+1); err != nil {
				return err
			}
			targets[b] = linkTarget{tooLong: true}
			continue
		}
		buf := make([]byte, size+1) // the content and a newline
		if _, err := io.ReadFull(br, buf); err != nil {
			return err
		}
		targets[b] = linkTarget{target: string(buf[:size])}
	}
	return nil
}
