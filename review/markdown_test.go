package review

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/termsafe"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// gfm is a GitHub-flavoured Markdown renderer: tables, autolinks,
// strikethrough and task lists, raw HTML passed through (unsafe), so that
// HTML a value smuggles in shows in the output.
var gfm = goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions())

func render(t testing.TB, md string) string {
	t.Helper()
	var b bytes.Buffer
	if err := gfm.Convert([]byte(md), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// wantHTML is what MarkdownCode(s) must render to: termsafe.String(s) in
// code, the pipes between the spans.
func wantHTML(s string) string {
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	var parts []string
	for _, p := range strings.Split(termsafe.String(s), "|") {
		if p != "" {
			p = "<code>" + esc.Replace(p) + "</code>"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "|")
}

func checkMarkdownCode(t testing.TB, s string) {
	md := MarkdownCode(s)
	if s == "" {
		if md != "" {
			t.Errorf("MarkdownCode(\"\") = %q", md)
		}
		return
	}
	want := wantHTML(s)
	if got := render(t, "x "+md+" y\n"); got != "<p>x "+want+" y</p>\n" {
		t.Errorf("in a paragraph, MarkdownCode(%q) = %q renders\n%s\nwant <p>x %s y</p>", s, md, got, want)
	}
	table := render(t, "| a | b |\n|---|---|\n| "+md+" | z |\n")
	if !strings.Contains(table, "<td>"+want+"</td>\n<td>z</td>") || strings.Count(table, "<td>") != 2 {
		t.Errorf("in a table cell, MarkdownCode(%q) = %q renders\n%s\nwant <td>%s</td> then <td>z</td>", s, md, table, want)
	}
}

// TestMarkdownCode: values that would break out of a code span, a table
// cell or a line, or that Markdown would take for syntax.
func TestMarkdownCode(t *testing.T) {
	for _, s := range []string{
		"main", "", "a`b", "`", "``a``", "a|b", "|", "||`|", "`a`|`b`", " a ", "  ", " ` ",
		"feature/x\n| widens | everything |", "<img src=x onerror=alert(1)>", "@octocat #1 [l](http://e.example)",
		"**bold** _i_ ~~s~~ :smile:", "a\\|b", "a\\", "\\`", "x\r\ny", "\u202eevil", "&amp; &#124;",
		"www.example.com https://example.com", "<!--", "a\x00b", "- [ ] task",
	} {
		checkMarkdownCode(t, s)
	}
}

func FuzzMarkdownCode(f *testing.F) {
	for _, s := range []string{"main", "a`b|c", "``|``", " ` ", "<b>", "\n|", "\\|"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkMarkdownCode(t, s) })
}
