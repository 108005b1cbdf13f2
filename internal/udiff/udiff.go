// Package udiff owns agentbox's unified diffs: the text `generate --check`
// prints for drift between the files on disk and the files agentbox would
// write. The output follows `diff -u` (three lines of context, `--- a/NAME`
// and `+++ b/NAME` headers without timestamps, GNU hunk ranges, and
// `\ No newline at end of file` markers); the line diff itself is a
// linear-space Myers algorithm (diff.go), so the hunks are minimal.
package udiff

import (
	"bytes"
	"fmt"
	"strings"
)

// context is the number of unchanged lines shown around each change.
const context = 3

// Unified returns a unified diff between old and new, the contents of the
// file NAME before and after. oldMissing says the file does not exist yet
// (the header reads `--- /dev/null`, and old is ignored); newMissing says it
// is being removed (`+++ /dev/null`, new is ignored).
//
// It returns "" when both sides are equal: same bytes, and both present or
// both missing. A file that exists on one side and is empty has no hunks:
// the result is the two header lines alone.
func Unified(name string, old, new []byte, oldMissing, newMissing bool) string {
	if oldMissing {
		old = nil
	}
	if newMissing {
		new = nil
	}
	if oldMissing == newMissing && bytes.Equal(old, new) {
		return ""
	}
	var sb strings.Builder
	if oldMissing {
		sb.WriteString("--- /dev/null\n")
	} else {
		sb.WriteString("--- a/" + name + "\n")
	}
	if newMissing {
		sb.WriteString("+++ /dev/null\n")
	} else {
		sb.WriteString("+++ b/" + name + "\n")
	}
	a, b := splitLines(old), splitLines(new)
	ops := script(a, b)
	for _, h := range hunks(ops) {
		writeHunk(&sb, h, a, b)
	}
	return sb.String()
}

// splitLines splits data after each "\n"; the last line lacks "\n" when the
// data does not end with one, which makes it differ from the same text with
// a newline, as in diff.
func splitLines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// opKind says what one step of an edit script does.
type opKind byte

const (
	opEqual  opKind = ' '
	opDelete opKind = '-'
	opInsert opKind = '+'
)

// op is one line of the edit script. i and j are its positions in a and b:
// the index of the line it shows (a[i] for equal and delete, b[j] for
// equal and insert), and for the other side the number of lines before it.
type op struct {
	kind opKind
	i, j int
}

// hunk is a run of ops shown together, with its ranges in a and b.
type hunk struct {
	ops            []op
	aStart, aCount int // aStart is the 0-based index of the first a line
	bStart, bCount int
}

// hunks groups the changes of ops with context lines; changes separated by
// at most 2*context unchanged lines share a hunk, as in diff -u.
func hunks(ops []op) []hunk {
	var out []hunk
	for i := 0; i < len(ops); {
		if ops[i].kind == opEqual {
			i++
			continue
		}
		start := max(0, i-context)
		end := i // one past the last change in this hunk
		for end < len(ops) {
			if ops[end].kind != opEqual {
				end++
				continue
			}
			next := end
			for next < len(ops) && ops[next].kind == opEqual {
				next++
			}
			if next == len(ops) || next-end > 2*context {
				break
			}
			end = next
		}
		stop := min(len(ops), end+context)
		out = append(out, newHunk(ops[start:stop]))
		i = stop
	}
	return out
}

// newHunk computes the ranges of the ops in h. Its first op's positions
// count the a and b lines before the hunk.
func newHunk(h []op) hunk {
	hk := hunk{ops: h, aStart: h[0].i, bStart: h[0].j}
	for _, o := range h {
		if o.kind != opInsert {
			hk.aCount++
		}
		if o.kind != opDelete {
			hk.bCount++
		}
	}
	return hk
}

func writeHunk(sb *strings.Builder, h hunk, a, b []string) {
	fmt.Fprintf(sb, "@@ -%s +%s @@\n", hunkRange(h.aStart, h.aCount), hunkRange(h.bStart, h.bCount))
	for _, o := range h.ops {
		var line string
		if o.kind == opInsert {
			line = b[o.j]
		} else {
			line = a[o.i]
		}
		sb.WriteByte(byte(o.kind))
		sb.WriteString(line)
		if !strings.HasSuffix(line, "\n") {
			sb.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange formats one side of a hunk header like GNU diff: "start,count",
// "start" alone when count is 1, and for an empty range the line before it.
func hunkRange(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	default:
		return fmt.Sprintf("%d,%d", start+1, count)
	}
}
