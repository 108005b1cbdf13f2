package udiff

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestUnifiedKnown(t *testing.T) {
	tests := []struct {
		name                   string
		old, new               string
		oldMissing, newMissing bool
		want                   string
	}{
		{name: "equal", old: "a\nb\n", new: "a\nb\n", want: ""},
		{name: "both missing", oldMissing: true, newMissing: true, want: ""},
		{name: "both empty", want: ""},
		{
			name: "one line changed",
			old:  "a\nb\nc\n", new: "a\nB\nc\n",
			want: "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
		},
		{
			name: "new file",
			old:  "ignored\n", new: "x\ny\n", oldMissing: true,
			want: "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+x\n+y\n",
		},
		{
			name: "removed file",
			old:  "x\n", new: "ignored\n", newMissing: true,
			want: "--- a/f\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n",
		},
		{
			name:       "new empty file",
			oldMissing: true,
			want:       "--- /dev/null\n+++ b/f\n",
		},
		{
			name: "emptied file",
			old:  "a\n",
			want: "--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-a\n",
		},
		{
			name: "append at end, context 3",
			old:  "1\n2\n3\n4\n5\n", new: "1\n2\n3\n4\n5\n6\n",
			want: "--- a/f\n+++ b/f\n@@ -3,3 +3,4 @@\n 3\n 4\n 5\n+6\n",
		},
		{
			name: "insert at start",
			old:  "1\n2\n3\n4\n5\n", new: "0\n1\n2\n3\n4\n5\n",
			want: "--- a/f\n+++ b/f\n@@ -1,3 +1,4 @@\n+0\n 1\n 2\n 3\n",
		},
		{
			name: "pure insertion in the middle with no context before",
			old:  "1\n2\n", new: "1\nx\n2\n",
			want: "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n 1\n+x\n 2\n",
		},
		{
			name: "two hunks (7 unchanged lines between)",
			old:  "a\n1\n2\n3\n4\n5\n6\n7\nb\n", new: "A\n1\n2\n3\n4\n5\n6\n7\nB\n",
			want: "--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n-a\n+A\n 1\n 2\n 3\n@@ -6,4 +6,4 @@\n 5\n 6\n 7\n-b\n+B\n",
		},
		{
			name: "one hunk (6 unchanged lines between)",
			old:  "a\n1\n2\n3\n4\n5\n6\nb\n", new: "A\n1\n2\n3\n4\n5\n6\nB\n",
			want: "--- a/f\n+++ b/f\n@@ -1,8 +1,8 @@\n-a\n+A\n 1\n 2\n 3\n 4\n 5\n 6\n-b\n+B\n",
		},
		{
			name: "deletions before insertions",
			old:  "k\na\nb\nk\n", new: "k\nc\nd\nk\n",
			want: "--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n k\n-a\n-b\n+c\n+d\n k\n",
		},
		{
			name: "missing newline added",
			old:  "a\nb", new: "a\nb\n",
			want: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n",
		},
		{
			name: "missing newline removed",
			old:  "a\nb\n", new: "a\nb",
			want: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n",
		},
		{
			name: "missing newline on both sides, unchanged last line in context",
			old:  "a\nb\nc\nd", new: "a\nB\nc\nd",
			want: "--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n a\n-b\n+B\n c\n d\n\\ No newline at end of file\n",
		},
		{
			name: "missing newline, whole file",
			old:  "x", new: "y",
			want: "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+y\n\\ No newline at end of file\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Unified("f", []byte(tt.old), []byte(tt.new), tt.oldMissing, tt.newMissing)
			if got != tt.want {
				t.Errorf("Unified:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// apply applies the hunks of a unified diff to old, checking every context
// and deleted line, and returns the result.
func apply(t *testing.T, old []byte, diff string) []byte {
	t.Helper()
	if diff == "" {
		return old
	}
	a := splitLines(old)
	lines := strings.SplitAfter(diff, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "--- ") || !strings.HasPrefix(lines[1], "+++ ") {
		t.Fatalf("bad headers in\n%s", diff)
	}
	hdr := regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@\n$`)
	var out []string
	next := 0 // next line of a to copy
	for k := 2; k < len(lines); {
		m := hdr.FindStringSubmatch(lines[k])
		if m == nil {
			t.Fatalf("line %d: want a hunk header, got %q", k, lines[k])
		}
		k++
		num := func(s string, def int) int {
			if s == "" {
				return def
			}
			n, _ := strconv.Atoi(s)
			return n
		}
		aStart, aCount, bStart, bCount := num(m[1], 0), num(m[2], 1), num(m[3], 0), num(m[4], 1)
		pos := aStart - 1 // 0-based index of the hunk's first a line
		if aCount == 0 {
			pos = aStart
		}
		if pos < next {
			t.Fatalf("hunk at %d overlaps the previous one", aStart)
		}
		out = append(out, a[next:pos]...)
		if wantB := len(out) + 1; bCount > 0 && bStart != wantB || bCount == 0 && bStart != len(out) {
			t.Fatalf("hunk %q: new start %d, want %d", m[0], bStart, wantB)
		}
		gotA, gotB := 0, 0
		for k < len(lines) && !strings.HasPrefix(lines[k], "@@") {
			l := lines[k]
			k++
			text := l[1:]
			if k < len(lines) && lines[k] == "\\ No newline at end of file\n" {
				text = strings.TrimSuffix(text, "\n")
				k++
			}
			switch l[0] {
			case ' ', '-':
				if pos >= len(a) || a[pos] != text {
					t.Fatalf("line %q does not match old line %d", l, pos+1)
				}
				pos++
				gotA++
				if l[0] == ' ' {
					out = append(out, text)
					gotB++
				}
			case '+':
				out = append(out, text)
				gotB++
			default:
				t.Fatalf("bad hunk line %q", l)
			}
		}
		if gotA != aCount || gotB != bCount {
			t.Fatalf("hunk %q has %d old and %d new lines", strings.TrimSpace(m[0]), gotA, gotB)
		}
		next = pos
	}
	out = append(out, a[next:]...)
	return []byte(strings.Join(out, ""))
}

// randomFile makes a file of up to n lines over an alphabet of k lines,
// sometimes without a final newline.
func randomFile(r *rand.Rand, n, k int) []byte {
	var sb strings.Builder
	lines := r.IntN(n + 1)
	for range lines {
		fmt.Fprintf(&sb, "l%d\n", r.IntN(k))
	}
	s := sb.String()
	if len(s) > 0 && r.IntN(4) == 0 {
		s = s[:len(s)-1]
	}
	return []byte(s)
}

// mutate edits a copy of old with a few insertions, deletions and changes.
func mutate(r *rand.Rand, old []byte, k int) []byte {
	lines := splitLines(old)
	for range r.IntN(6) {
		p := r.IntN(len(lines) + 1)
		switch r.IntN(3) {
		case 0:
			lines = append(lines[:p], append([]string{fmt.Sprintf("l%d\n", r.IntN(k))}, lines[p:]...)...)
		case 1:
			if p < len(lines) {
				lines = append(lines[:p], lines[p+1:]...)
			}
		case 2:
			if p < len(lines) {
				lines[p] = fmt.Sprintf("m%d\n", r.IntN(k))
			}
		}
	}
	s := strings.Join(lines, "")
	if r.IntN(5) == 0 {
		s = strings.TrimSuffix(s, "\n")
	}
	return []byte(s)
}

func TestUnifiedAppliesBack(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 3000 {
		k := 1 + r.IntN(8)
		old := randomFile(r, 30, k)
		var new []byte
		if n%2 == 0 {
			new = randomFile(r, 30, k)
		} else {
			new = mutate(r, old, k)
		}
		d := Unified("f", old, new, false, false)
		if got := apply(t, old, d); !bytes.Equal(got, new) {
			t.Fatalf("applying the diff of\n%q\nto\n%q\ngives\n%q\ndiff:\n%s", old, new, got, d)
		}
		if bytes.Equal(old, new) != (d == "") {
			t.Fatalf("equal=%v but diff %q", bytes.Equal(old, new), d)
		}
	}
}

// lcs is the textbook O(NM) longest common subsequence length.
func lcs(a, b []string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			switch {
			case a[i] == b[j]:
				cur[j+1] = prev[j] + 1
			default:
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func TestScriptIsMinimal(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		k := 1 + r.IntN(6)
		a, b := splitLines(randomFile(r, 40, k)), splitLines(randomFile(r, 40, k))
		edits := 0
		for _, o := range script(a, b) {
			if o.kind != opEqual {
				edits++
			}
		}
		if want := len(a) + len(b) - 2*lcs(a, b); edits != want {
			t.Fatalf("%d edits between %q and %q, want %d", edits, a, b, want)
		}
	}
}

// TestAgainstSystemDiff compares hunk headers and bodies with GNU diff -u
// on cases whose minimal diff is unambiguous.
func TestAgainstSystemDiff(t *testing.T) {
	diffBin, err := exec.LookPath("diff")
	if err != nil {
		t.Skip("no diff(1) on PATH")
	}
	numbered := func(n int, edit func(i int) string) string {
		var sb strings.Builder
		for i := 1; i <= n; i++ {
			sb.WriteString(edit(i))
		}
		return sb.String()
	}
	line := func(i int) string { return fmt.Sprintf("line %d\n", i) }
	cases := []struct{ name, old, new string }{
		{"one change", "a\nb\nc\n", "a\nB\nc\n"},
		{"insert at start", numbered(10, line), "new\n" + numbered(10, line)},
		{"append", numbered(10, line), numbered(10, line) + "new\n"},
		{"delete at end", numbered(10, line), numbered(9, line)},
		{"changes far apart", numbered(40, line), numbered(40, func(i int) string {
			if i == 5 || i == 20 || i == 27 || i == 40 {
				return fmt.Sprintf("changed %d\n", i)
			}
			return line(i)
		})},
		{"deleted block", numbered(30, line), numbered(30, func(i int) string {
			if i >= 10 && i < 15 {
				return ""
			}
			return line(i)
		})},
		{"inserted block", numbered(30, line), numbered(30, func(i int) string {
			if i == 12 {
				return "x\ny\nz\n" + line(i)
			}
			return line(i)
		})},
		{"no newline at end", numbered(5, line) + "last", numbered(5, line) + "last\n"},
		{"no newline, change before", numbered(8, line) + "last", "first\n" + numbered(8, line)[len("line 1\n"):] + "last"},
		{"emptied", numbered(3, line), ""},
		{"from empty", "", numbered(3, line)},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			oldPath, newPath := filepath.Join(dir, "old"), filepath.Join(dir, "new")
			if err := os.WriteFile(oldPath, []byte(c.old), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(newPath, []byte(c.new), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(diffBin, "-u", oldPath, newPath).Output()
			if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 1) {
				t.Fatalf("diff -u: %v", err)
			}
			// Drop diff's own headers (they carry paths and timestamps).
			want := string(out)
			for range 2 {
				want = want[strings.Index(want, "\n")+1:]
			}
			got := Unified("f", []byte(c.old), []byte(c.new), false, false)
			got = strings.TrimPrefix(got, "--- a/f\n+++ b/f\n")
			if got != want {
				t.Errorf("hunks differ from diff -u:\n%s\ndiff -u:\n%s", got, want)
			}
		})
	}
}

func TestUnifiedLargeIsFast(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const n = 5000
	var shuffled, other, rewritten strings.Builder
	base := make([]string, n)
	for i := range base {
		// Few distinct lines, like braces and blank lines in config files.
		base[i] = fmt.Sprintf("  key%d: value\n", r.IntN(50))
		fmt.Fprintf(&rewritten, "completely new line %d\n", i)
	}
	for _, i := range r.Perm(n) {
		shuffled.WriteString(base[i])
	}
	for i, l := range base {
		if i%7 == 0 {
			fmt.Fprintf(&other, "changed %d\n", i)
		}
		if i%11 != 0 {
			other.WriteString(l)
		}
	}
	old := []byte(strings.Join(base, ""))
	for name, new := range map[string]string{"shuffled": shuffled.String(), "scattered edits": other.String(), "rewritten": rewritten.String()} {
		start := time.Now()
		d := Unified("f", old, []byte(new), false, false)
		elapsed := time.Since(start)
		t.Logf("%s: %d lines -> %d lines, diff %d bytes, %v", name, n, strings.Count(new, "\n"), len(d), elapsed)
		if got := apply(t, old, d); !bytes.Equal(got, []byte(new)) {
			t.Fatalf("%s: diff does not apply", name)
		}
		// A guard against a search without its cost limit (which takes
		// minutes here), not a measurement: that is BenchmarkUnifiedLarge
		// (0.67 s a diff at a load of 15 on this 2-core machine). The
		// bound leaves room for a loaded machine.
		if elapsed > 10*time.Second && !raceEnabled {
			t.Errorf("%s: took %v, want seconds at most", name, elapsed)
		}
	}
}

// BenchmarkUnifiedLarge: the diff of 5,000 lines of few distinct values
// against a shuffle of them, the costliest case of TestUnifiedLargeIsFast.
func BenchmarkUnifiedLarge(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	const n = 5000
	base := make([]string, n)
	for i := range base {
		base[i] = fmt.Sprintf("  key%d: value\n", r.IntN(50))
	}
	var shuffled strings.Builder
	for _, i := range r.Perm(n) {
		shuffled.WriteString(base[i])
	}
	old, new := []byte(strings.Join(base, "")), []byte(shuffled.String())
	for b.Loop() {
		Unified("f", old, new, false, false)
	}
}
