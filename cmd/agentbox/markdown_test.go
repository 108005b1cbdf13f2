package main

import (
	"bytes"
	stdhtml "html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/termsafe"
	"github.com/agentbox-dev/agentbox/review"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// hostile is text that breaks Markdown that prints it raw: a code span's
// end, a table cell's end, a line break, HTML, a link and a mention.
const mdHostile = "x`|<img src=x>\n| widens | [l](http://e.example) @octocat"

// checkMarkdown renders md as GitHub-flavoured Markdown and checks that no
// value turned into HTML, a link or an extra table row or cell.
func checkMarkdown(t *testing.T, md string, rows int) string {
	t.Helper()
	var b bytes.Buffer
	if err := goldmark.New(goldmark.WithExtensions(extension.GFM)).Convert([]byte(md), &b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, bad := range []string{"<img", "<a ", "<em>", "<strong>l"} {
		if strings.Contains(html, bad) {
			t.Errorf("%q in the rendered Markdown:\n%s\nfrom\n%s", bad, html, md)
		}
	}
	if rows >= 0 && strings.Count(html, "<tr>") != rows+1 {
		t.Errorf("%d table rows, want %d:\n%s\nfrom\n%s", strings.Count(html, "<tr>")-1, rows, html, md)
	}
	return html
}

// TestDiffMarkdownEscapes: diff's Markdown shows a crafted revision name,
// subject, change and key as code, each on its row and in its cell.
func TestDiffMarkdownEscapes(t *testing.T) {
	r := &diffReport{Base: mdHostile, Summary: map[string]int{"widens": 1}, Rows: []review.DiffRow{{
		Kind: review.Widens, What: "hidden", Subject: mdHostile, From: mdHostile, To: "y", Side: "working",
		Origin: review.Origin{Key: "workspace.hidden[0]`|", Line: 3}}}}
	var b bytes.Buffer
	if err := report(&b, "diff", "markdown", r); err != nil {
		t.Fatal(err)
	}
	html := checkMarkdown(t, b.String(), 1)
	if n := regexp.MustCompile(`<td>`).FindAllStringIndex(html, -1); len(n) != 6 {
		t.Errorf("%d cells, want 6:\n%s", len(n), html)
	}
	para, _, _ := strings.Cut(html, "\n")
	text := stdhtml.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(para, ""))
	if want := "agentbox diff against " + termsafe.String(mdHostile) + ": widens 1"; text != want {
		t.Errorf("the summary reads\n%s\nwant\n%s", text, want)
	}
}

// TestExplainMarkdownEscapes: explain's Markdown shows the paths and
// patterns of agentbox.yaml and the git identity as code.
func TestExplainMarkdownEscapes(t *testing.T) {
	dir := t.TempDir()
	yaml := "agent: none\ngit:\n  name: \"Eve | *x* [l](http://e.example) @octocat\"\n  email: \"e|_v_@x.example\"\nworkspace:\n" +
		"  readonly: [\"r_x_\"]\n  writable: [.vscode]\n  hidden: [\".env\", \"**/[ab]*_x_*\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "agentbox.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	lock, err := os.ReadFile(filepath.Join(diffDir, "agentbox.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agentbox.lock"), lock, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runIn(t, dir, "explain", "--format", "markdown")
	if code != 0 {
		t.Fatalf("explain: exit %d: %s", code, stderr)
	}
	checkMarkdown(t, stdout, -1)
	checkCells(t, stdout)
	for _, want := range []string{"`Eve `\\|` *x* [l](http://e.example) @octocat <e`\\|`_v_@x.example>`", "`**/[ab]*_x_*`"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("%s not in\n%s", want, stdout)
		}
	}
}

// checkCells checks that every row of every Markdown table in md has as
// many cells as the table's header.
func checkCells(t *testing.T, md string) {
	t.Helper()
	pipe := regexp.MustCompile(`(^|[^\\])\|`)
	cells := -1
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			cells = -1
			continue
		}
		n := len(pipe.FindAllString(line, -1))
		if cells == -1 {
			cells = n
		} else if n != cells {
			t.Errorf("a row of %d cells in a table of %d: %s", n-1, cells-1, line)
		}
	}
}
