package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

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
