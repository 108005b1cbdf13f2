package generator

// The repository's files that generate --check reads besides the project's:
// agentbox's block of .gitattributes, and any .gitattributes line that would
// fold, in GitHub's view of a pull request, a file the reviewer must read.

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/udiff"
)

// CheckRepo reports the drift, in the git repository at root, of what
// agentbox keeps there for the project in dir (relative to root,
// slash-separated; "." for root). With agentbox's workflow in the
// repository, or a block already there, .gitattributes must hold the block
// agentbox ci github writes, unchanged. And no .gitattributes line may fold
// (linguist-generated, -diff, binary, or a macro of them) a file a reviewer
// must read: agentbox.yaml, the workflow, .gitattributes itself. Paths in the
// report are the repository's; "" means no drift. A .gitattributes that is a
// symbolic link counts as none, as git reads none through a link.
func CheckRepo(root, dir string) (string, error) {
	var b strings.Builder
	if err := checkBlock(&b, root, dir); err != nil {
		return "", err
	}
	a := attrReader{root: root, files: map[string][]attrLine{}}
	for _, p := range reviewedFiles(dir) {
		why, err := a.folds(p)
		if err != nil {
			return "", err
		}
		if why != "" {
			fmt.Fprintf(&b, "%s folds %s in GitHub's view of a pull request, which a reviewer must read; remove the attribute, or unset it for %s after that line\n", why, p, p)
		}
	}
	return b.String(), nil
}

// reviewedFiles are the files a reviewer of the project in dir must see
// in a pull request's diff.
func reviewedFiles(dir string) []string {
	return []string{path.Join(dir, config.ConfigFile), GitHubWorkflow, Gitattributes}
}

// checkBlock writes the drift of agentbox's block of .gitattributes to b.
func checkBlock(b *strings.Builder, root, dir string) error {
	old, err := readRegular(filepath.Join(root, Gitattributes))
	if err != nil {
		return err
	}
	wf, err := readRegular(filepath.Join(root, filepath.FromSlash(GitHubWorkflow)))
	if err != nil {
		return err
	}
	begin := -1
	for i, l := range bytes.Split(old, []byte("\n")) {
		if string(bytes.TrimSuffix(l, []byte("\r"))) == attrBegin {
			begin = i + 1
			break
		}
	}
	if begin < 0 && !IsCIWorkflow(wf) {
		return nil
	}
	want, err := MergeGitattributes(old, dir)
	switch {
	case err != nil:
		fmt.Fprintf(b, "%v\n", err)
	case begin < 0:
		fmt.Fprintf(b, "%s: agentbox's block is missing, and %s is agentbox's: run agentbox ci github to write it\n", Gitattributes, GitHubWorkflow)
		b.WriteString(udiff.Unified(Gitattributes, old, want, old == nil, false))
	case !bytes.Equal(old, want):
		fmt.Fprintf(b, "%s:%d: agentbox's block differs from what agentbox ci github writes: run agentbox ci github\n", Gitattributes, begin)
		b.WriteString(udiff.Unified(Gitattributes, old, want, false, false))
	}
	return nil
}

// readRegular reads a regular file; nil when there is none (or a link,
// or a file where a directory on its way should be).
func readRegular(p string) ([]byte, error) {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || (err == nil && !fi.Mode().IsRegular()) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return os.ReadFile(p)
}

// attrLine is one line of a .gitattributes that names attributes.
type attrLine struct {
	file    string // the repository's path of the .gitattributes
	n       int    // its line number
	text    string
	pattern string
	attrs   []string
}

// attrReader reads the .gitattributes files of a repository, once each.
type attrReader struct {
	root  string
	files map[string][]attrLine
	// macros are the root file's [attr] definitions that fold.
	macros map[string]bool
}

func (a *attrReader) lines(dir string) ([]attrLine, error) {
	file := path.Join(dir, Gitattributes)
	if ls, ok := a.files[file]; ok {
		return ls, nil
	}
	data, err := readRegular(filepath.Join(a.root, filepath.FromSlash(file)))
	if err != nil {
		return nil, err
	}
	var ls []attrLine
	for i, raw := range strings.Split(string(data), "\n") {
		text := strings.TrimSpace(raw)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		pattern, rest := splitPattern(text)
		ls = append(ls, attrLine{file: file, n: i + 1, text: text, pattern: pattern, attrs: strings.Fields(rest)})
	}
	a.files[file] = ls
	return ls, nil
}

// folds says which line leaves the file at p (repository path) folded in
// GitHub's diff ("FILE:LINE: "TEXT""), or "".
func (a *attrReader) folds(p string) (string, error) {
	if a.macros == nil {
		root, err := a.lines(".")
		if err != nil {
			return "", err
		}
		a.macros = map[string]bool{}
		for _, l := range root {
			if name, ok := strings.CutPrefix(l.pattern, "[attr]"); ok && foldingAttrs(l.attrs, nil) {
				a.macros[name] = true
			}
		}
	}
	// The files from the top down to p's directory: a deeper one, and a
	// later line, decides.
	dirs := []string{"."}
	if d := path.Dir(p); d != "." {
		parts := strings.Split(d, "/")
		for i := range parts {
			dirs = append(dirs, strings.Join(parts[:i+1], "/"))
		}
	}
	var generated, nodiff *attrLine
	for _, d := range dirs {
		ls, err := a.lines(d)
		if err != nil {
			return "", err
		}
		rel := p
		if d != "." {
			rel = strings.TrimPrefix(p, d+"/")
		}
		for i := range ls {
			l := &ls[i]
			if strings.HasPrefix(l.pattern, "[attr]") || !attrMatch(l.pattern, rel) {
				continue
			}
			for _, attr := range l.attrs {
				g, nd, ok := attrEffect(attr, a.macros)
				if !ok {
					continue
				}
				generated = pick(generated, g, l)
				nodiff = pick(nodiff, nd, l)
			}
		}
	}
	for _, l := range []*attrLine{generated, nodiff} {
		if l != nil {
			return fmt.Sprintf("%s:%d: %q", l.file, l.n, l.text), nil
		}
	}
	return "", nil
}

// pick is the line that last decided an attribute: l when it folds (+1),
// none when it unfolds (-1), cur when it says nothing of it (0).
func pick(cur *attrLine, effect int, l *attrLine) *attrLine {
	switch effect {
	case 1:
		return l
	case -1:
		return nil
	}
	return cur
}

// attrEffect is what one attribute does to linguist-generated (g) and diff
// (nd): +1 folds, -1 unfolds, 0 nothing; ok is false for attributes that
// touch neither.
func attrEffect(attr string, macros map[string]bool) (g, nd int, ok bool) {
	name, value, hasValue := strings.Cut(attr, "=")
	switch {
	case name == "linguist-generated" && !hasValue, name == "linguist-generated" && value != "false":
		return 1, 0, true
	case name == "-linguist-generated", name == "!linguist-generated", name == "linguist-generated":
		return -1, 0, true
	case name == "-diff", name == "binary" && !hasValue:
		return 0, 1, true
	case name == "diff", name == "!diff":
		return 0, -1, true
	case macros[name] && !hasValue:
		return 1, 1, true
	}
	return 0, 0, false
}

// foldingAttrs reports whether attrs fold a file.
func foldingAttrs(attrs []string, macros map[string]bool) bool {
	for _, attr := range attrs {
		if g, nd, _ := attrEffect(attr, macros); g > 0 || nd > 0 {
			return true
		}
	}
	return false
}

// splitPattern splits a .gitattributes line into its pattern (unquoted
// when written as a C string) and the rest.
func splitPattern(text string) (pattern, rest string) {
	if strings.HasPrefix(text, `"`) {
		for i := 1; i < len(text); i++ {
			switch text[i] {
			case '\\':
				i++
			case '"':
				if p, err := strconv.Unquote(text[:i+1]); err == nil {
					return p, text[i+1:]
				}
				return text[:i+1], text[i+1:]
			}
		}
	}
	pattern, rest, _ = strings.Cut(strings.ReplaceAll(text, "\t", " "), " ")
	return pattern, rest
}

// attrMatch reports whether a .gitattributes pattern matches the file at
// rel (relative to the .gitattributes' directory), as git matches: a
// pattern without a slash matches the file's name at any depth, one with a
// slash the path from the directory, "**" any number of directories. A
// pattern ending in a slash names directories only; a negative one is
// ignored by git.
func attrMatch(pattern, rel string) bool {
	pattern = strings.ReplaceAll(pattern, "[!", "[^")
	switch {
	case pattern == "", strings.HasPrefix(pattern, "!"), strings.HasSuffix(pattern, "/"):
		return false
	case !strings.Contains(pattern, "/"):
		ok, err := path.Match(pattern, path.Base(rel))
		return err == nil && ok
	}
	return segMatch(strings.Split(strings.TrimPrefix(pattern, "/"), "/"), strings.Split(rel, "/"))
}

func segMatch(p, s []string) bool {
	if len(p) == 0 {
		return len(s) == 0
	}
	if p[0] == "**" {
		for i := 0; i <= len(s); i++ {
			if segMatch(p[1:], s[i:]) {
				return true
			}
		}
		return false
	}
	if len(s) == 0 {
		return false
	}
	ok, err := path.Match(p[0], s[0])
	return err == nil && ok && segMatch(p[1:], s[1:])
}
