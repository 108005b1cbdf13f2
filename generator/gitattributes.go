package generator

// The block of .gitattributes that marks the generated files
// linguist-generated: GitHub folds them in a pull request's diff, and the
// reviewer reads the agentbox diff comment instead.

import (
	"bytes"
	"fmt"
	"path"

	"github.com/agentbox-dev/agentbox/lockfile"
)

// Gitattributes is the file the block goes in, at the repository root.
const Gitattributes = ".gitattributes"

// The lines that open and close agentbox's block; the lines between them
// are agentbox's, everything else is left byte for byte.
const (
	attrBegin = "# BEGIN agentbox: generated files, folded in review (written by agentbox ci github)"
	attrEnd   = "# END agentbox"
)

// gitattributesBlock lists the generated files of the project in dir
// (relative to the repository root, slash-separated). The workflow is not
// among them: a change to what CI may do should be read, not folded.
func gitattributesBlock(dir, eol string) []byte {
	var b bytes.Buffer
	line := func(s string) { b.WriteString(s + eol) }
	line(attrBegin)
	for _, p := range []string{OutDir + "/**", DevcontainerFile, lockfile.File} {
		line(path.Join(dir, p) + " linguist-generated")
	}
	line(attrEnd)
	return b.Bytes()
}

// MergeGitattributes returns old with agentbox's block for the project in
// dir: replaced in place when old has one, else appended. Every other line
// stays as it was. The block takes old's line endings (CRLF when old has
// any).
func MergeGitattributes(old []byte, dir string) ([]byte, error) {
	if err := ValidateCIDir(dir); err != nil {
		return nil, err
	}
	eol := "\n"
	if bytes.Contains(old, []byte("\r\n")) {
		eol = "\r\n"
	}
	block := gitattributesBlock(dir, eol)
	lines := bytes.SplitAfter(old, []byte("\n"))
	begin, end := -1, -1
	for i, l := range lines {
		switch string(bytes.TrimRight(l, "\r\n")) {
		case attrBegin:
			if begin >= 0 {
				return nil, fmt.Errorf("%s: two agentbox blocks (%q); remove one and run again", Gitattributes, attrBegin)
			}
			begin = i
		case attrEnd:
			if begin >= 0 && end < 0 {
				end = i
			}
		}
	}
	var b bytes.Buffer
	switch {
	case begin >= 0 && end < 0:
		return nil, fmt.Errorf("%s: the agentbox block has no end line %q; fix or remove the block and run again", Gitattributes, attrEnd)
	case begin >= 0:
		b.Write(bytes.Join(lines[:begin], nil))
		b.Write(block)
		rest := bytes.Join(lines[end+1:], nil)
		if !bytes.HasSuffix(lines[end], []byte("\n")) {
			// The end line was the last, without a newline: so stays the file.
			b.Truncate(b.Len() - len(eol))
		}
		b.Write(rest)
	default:
		b.Write(old)
		if len(old) > 0 {
			if !bytes.HasSuffix(old, []byte("\n")) {
				b.WriteString(eol)
			}
			b.WriteString(eol)
		}
		b.Write(block)
	}
	return b.Bytes(), nil
}
