package review

import (
	"strings"

	"github.com/agentbox-dev/agentbox/internal/termsafe"
)

// MarkdownCode is how a value that agentbox did not write itself (a
// revision name, a path, a pattern, a git identity, a version) reaches the
// Markdown that explain and diff print, which the generated workflow posts
// as a pull request's comment: as inline code, the one Markdown construct
// whose content is never parsed, so no value can open a link, an image,
// HTML, emphasis, a mention or a reference. Every template's foreign value
// goes through it; nothing else in the templates is foreign.
//
// The rule, safe in a paragraph and in a table cell alike:
//
//   - the value is first escaped as for a terminal (termsafe.String): no
//     line break, control or invisible character is left, so the value
//     stays on its table row;
//   - each run between pipes becomes a code span whose fence is one
//     backtick longer than the longest run of backticks in it, padded
//     with a space where it starts or ends with a backtick or a space
//     (CommonMark strips one space each side then);
//   - a pipe is written \| between the spans: a table takes it for a
//     pipe, not a cell's end, and so does a paragraph.
//
// So the text GitHub shows is termsafe.String(s), character for
// character; the empty string gives nothing.
func MarkdownCode(s string) string {
	s = termsafe.String(s)
	var b strings.Builder
	for i, part := range strings.Split(s, "|") {
		if i > 0 {
			b.WriteString(`\|`)
		}
		if part != "" {
			b.WriteString(codeSpan(part))
		}
	}
	return b.String()
}

// codeSpan is s, which holds no pipe and no line break, as one code span.
func codeSpan(s string) string {
	longest, run := 0, 0
	for _, c := range []byte(s) {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	pad := ""
	if s[0] == '`' || s[len(s)-1] == '`' || (s[0] == ' ' && s[len(s)-1] == ' ' && strings.Trim(s, " ") != "") {
		pad = " "
	}
	return fence + pad + s + pad + fence
}
