package gitgate

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// The host's git configuration may be read from, or name programs in, the
// work tree: a file that include.path or includeIf names (or .git/config
// itself, linked there), and programs that git runs by itself (not on
// request, as an alias runs): an fsmonitor, a pager or editor, filter and
// diff drivers, credential helpers. Those files are protected.

// programKeys are the configuration keys (as git lists them: section and
// key lower case) whose values git runs without being asked to.
var programKeys = regexp.MustCompile(`^(core\.(fsmonitor|pager|editor|sshcommand|askpass|gitproxy)|sequence\.editor|diff\.external|diff\..+\.(textconv|command)|filter\..+\.(clean|smudge|process)|merge\..+\.driver|credential\.(.+\.)?helper|gpg\.(.+\.)?program|pager\..+|interactive\.difffilter)$`)

var includeKey = regexp.MustCompile(`^include(if\..*)?\.path$`)

// configPlaces returns the paths of the work tree at top that the host's
// git configuration reads or runs.
func configPlaces(ctx context.Context, g gitRunner, top string) []place {
	var out []place
	add := func(p, why string) {
		for _, rel := range hooksPathRel(top, p, nil) {
			out = append(out, place{at: split(rel), why: why})
		}
	}
	list, err := g.run(ctx, nil, "config", "-z", "--show-origin", "--list")
	if err != nil {
		return nil
	}
	includes, _ := g.run(ctx, nil, "config", "-z", "--show-origin", "--type=path", "--get-regexp", `^include(if\..*)?\.path$`)
	seen := map[string]bool{}
	for _, e := range configEntries(includes) {
		if !includeKey.MatchString(e.key) || e.value == "" {
			continue
		}
		p := e.value
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(e.origin), p)
		}
		add(p, fmt.Sprintf("your git configuration includes it (%s): git runs the programs it names", e.key))
	}
	for _, e := range configEntries(list) {
		if !seen[e.origin] {
			seen[e.origin] = true
			add(e.origin, "your git configuration is read from it: git runs the programs it names")
		}
		if !programKeys.MatchString(e.key) {
			continue
		}
		for _, tok := range strings.FieldsFunc(e.value, func(r rune) bool { return strings.ContainsRune(" \t\n;|&()<>'\"`=", r) }) {
			p := tok
			if !filepath.IsAbs(p) {
				p = filepath.Join(top, p)
			}
			if _, err := os.Lstat(p); err == nil {
				add(p, fmt.Sprintf("your git configuration runs it (%s): git runs it by itself", e.key))
			}
		}
	}
	return out
}

type configEntry struct{ origin, key, value string }

// configEntries reads `git config -z --show-origin` output: "file:ORIGIN",
// NUL, "KEY" LF "VALUE", NUL. Origins that are not files (the command
// line, blobs) are left out. A relative origin is taken from the top.
func configEntries(out []byte) []configEntry {
	var es []configEntry
	toks := bytes.Split(out, []byte{0})
	for i := 0; i+1 < len(toks); i += 2 {
		origin, ok := strings.CutPrefix(string(toks[i]), "file:")
		if !ok {
			continue
		}
		key, value, _ := strings.Cut(string(toks[i+1]), "\n")
		es = append(es, configEntry{origin, key, value})
	}
	return es
}
