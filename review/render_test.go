package review

import (
	"bytes"
	stdhtml "html"
	"regexp"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/termsafe"
)

// TestChangeRisk: a risk row shows one package once with its two versions,
// another value as it is.
func TestChangeRisk(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{"undici@7.1.0", "undici@7.0.0", "undici 7.1.0 -> 7.0.0"},
		{"x@1.0.0 at y/node_modules/x", "x@1.0.0", "x 1.0.0 at y/node_modules/x -> 1.0.0"},
		{"debian:bookworm-slim@sha256:" + sixtyFour('1'), "mirror.example/debian:bookworm-slim@sha256:" + sixtyFour('2'),
			"debian:bookworm-slim@sha256:111111111111… -> mirror.example/debian:bookworm-slim@sha256:222222222222…"},
		{"no version", "another", "no version -> another"},
	} {
		if got := (DiffRow{Kind: Risk, From: tc.from, To: tc.to}).Change(); got != tc.want {
			t.Errorf("change(%q, %q) = %q, want %q", tc.from, tc.to, got, tc.want)
		}
	}
}

func sixtyFour(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

// TestDiffSummary: the rows are counted by kind, every kind present, and
// the summary line names the kinds there are, risks first.
func TestDiffSummary(t *testing.T) {
	d := newDiff("HEAD", []DiffRow{{Kind: Pinned}, {Kind: Widens}, {Kind: Risk}, {Kind: Pinned}})
	want := map[string]int{"risks": 1, "widens": 1, "narrows": 0, "changes": 0, "pins": 2}
	if len(d.Summary) != len(want) {
		t.Errorf("summary %v, want %v", d.Summary, want)
	}
	for k, n := range want {
		if d.Summary[k] != n {
			t.Errorf("summary %v, want %v", d.Summary, want)
		}
	}
	if got := d.SummaryLine(); got != "risks 1, widens 1, pins 2" {
		t.Errorf("summary line %q", got)
	}
	empty := newDiff("HEAD", nil)
	if empty.Rows == nil || empty.SummaryLine() != "no change to the sandbox" {
		t.Errorf("no rows: %#v, %q", empty.Rows, empty.SummaryLine())
	}
}

// mdHostile is text that breaks Markdown that prints it raw: a code span's
// end, a table cell's end, a line break, HTML, a link and a mention.
const mdHostile = "x`|<img src=x>\n| widens | [l](http://e.example) @octocat"

// TestDiffMarkdownEscapes: diff's Markdown shows a crafted revision name,
// subject, change and key as code, each on its row and in its cell.
func TestDiffMarkdownEscapes(t *testing.T) {
	d := &Diff{Base: mdHostile, Summary: map[string]int{"widens": 1}, Rows: []DiffRow{{
		Kind: Widens, What: "hidden", Subject: mdHostile, From: mdHostile, To: "y", Side: "working",
		Origin: Origin{Key: "workspace.hidden[0]`|", Line: 3}}}}
	var b bytes.Buffer
	if err := d.Render(&b, Markdown); err != nil {
		t.Fatal(err)
	}
	html := render(t, b.String())
	for _, bad := range []string{"<img", "<a ", "<em>", "<strong>l"} {
		if strings.Contains(html, bad) {
			t.Errorf("%q in the rendered Markdown:\n%s\nfrom\n%s", bad, html, b.String())
		}
	}
	if n := strings.Count(html, "<tr>"); n != 2 {
		t.Errorf("%d table rows, want 1:\n%s", n-1, html)
	}
	if n := strings.Count(html, "<td>"); n != 6 {
		t.Errorf("%d cells, want 6:\n%s", n, html)
	}
	para, _, _ := strings.Cut(html, "\n")
	text := stdhtml.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(para, ""))
	if want := "agentbox diff against " + termsafe.String(mdHostile) + ": widens 1"; text != want {
		t.Errorf("the summary reads\n%s\nwant\n%s", text, want)
	}
}

// TestDiffTextEscapes: diff's text shows the same values escaped, one row
// on one line, and renders the same bytes twice.
func TestDiffTextEscapes(t *testing.T) {
	d := newDiff("main\x1b[2J", []DiffRow{{Kind: Widens, Aspect: GainReach, What: "destination",
		Subject: "evil\u202e.example:443", To: "allowed", Gain: "reach \x9b it", Side: "working", Origin: Origin{Key: "network.domains[0]", Line: 2}}})
	var a, b bytes.Buffer
	if err := d.Render(&a, Text); err != nil {
		t.Fatal(err)
	}
	if err := d.Render(&b, Text); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("two renders differ:\n%s\n%s", a.String(), b.String())
	}
	out := a.String()
	for _, raw := range []string{"\x1b", "\u202e", "\x9b"} {
		if strings.Contains(out, raw) {
			t.Errorf("%q raw in\n%s", raw, out)
		}
	}
	if want := "widens 1 (" + termsafe.String("main\x1b[2J") + " -> working tree)\n"; !strings.HasPrefix(out, want) {
		t.Errorf("got\n%s\nwant it to start with %q", out, want)
	}
	if err := d.Render(&a, "json"); err == nil {
		t.Error("Render accepted the format json")
	}
}
