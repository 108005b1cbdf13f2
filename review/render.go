package review

import (
	"embed"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"text/template"

	"github.com/agentbox-dev/agentbox/internal/termsafe"
)

// The formats Render lays a view out in (JSON is the views' own
// encoding).
const (
	Text     = "text"     // for a terminal: aligned columns, foreign values through termsafe
	Markdown = "markdown" // for a pull request's comment and a job summary: foreign values through MarkdownCode
)

//go:embed templates/*.tmpl
var templateFS embed.FS

// views are the templates NAME.FORMAT.tmpl of the views. In Markdown every
// foreign value goes through md (MarkdownCode); in text, those that no
// grammar of agentbox.yaml bounds (diff's base, subjects and changes, an
// environment value) go through esc (termsafe.String).
var views = template.Must(template.New("").Option("missingkey=error").Funcs(template.FuncMap{
	"join":    strings.Join,
	"ports":   PortList,
	"negated": func(p string) bool { return strings.HasPrefix(p, "!") },
	"esc":     termsafe.String,
	"md":      MarkdownCode,
}).ParseFS(templateFS, "templates/*.tmpl"))

// Render writes the sandbox as explain shows it, in format (Text or
// Markdown).
func (s *Sandbox) Render(w io.Writer, format string) error {
	return renderView(w, "explain", format, s)
}

// Render writes the diff as agentbox diff shows it, in format (Text or
// Markdown); the generated workflow posts the Markdown on pull requests.
func (d *Diff) Render(w io.Writer, format string) error {
	return renderView(w, "diff", format, d)
}

// renderView executes the template name.format.tmpl on v; text is aligned on
// its tabs.
func renderView(w io.Writer, name, format string, v any) error {
	if format != Text && format != Markdown {
		return fmt.Errorf("internal error: no %s format of %s", format, name)
	}
	if format == Text {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		defer tw.Flush()
		w = tw
	}
	return views.ExecuteTemplate(w, name+"."+format+".tmpl", v)
}

// PortList is ports as "22, 443", as the reports write them.
func PortList(ports []uint16) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ", ")
}

var digestRe = regexp.MustCompile(`(sha256:[0-9a-f]{12})[0-9a-f]{52}|(sha(?:1|256|384|512)-[0-9A-Za-z+/]{12})[0-9A-Za-z+/]+=*`)

// Change is the row's from and to as a diff shows them, digests and
// integrities shortened to 12 digits. A pin, or a risk of one package at
// two versions, shows the image or package once, then the two digests or
// versions.
func (r DiffRow) Change() string {
	from, to := digestRe.ReplaceAllString(r.From, "$1$2…"), digestRe.ReplaceAllString(r.To, "$1$2…")
	switch {
	case r.From == "":
		return "added: " + to
	case r.To == "":
		return "removed: " + from
	case r.Kind == Pinned || r.Kind == Risk && samePackage(from, to):
		i, j := strings.LastIndex(from, "@"), strings.LastIndex(to, "@")
		return fmt.Sprintf("%s %s -> %s", from[:i], from[i+1:], to[j+1:])
	}
	return fmt.Sprintf("%s -> %s", from, to)
}

// Gains reports whether a row that is not narrowing has words for what
// the agent gains.
func (d *Diff) Gains() bool {
	return slices.ContainsFunc(d.Rows, func(r DiffRow) bool { return r.Gain != "" && r.Kind != Narrows })
}

// samePackage reports whether two "name@version" values name one package
// (or image, or Debian package) at two versions.
func samePackage(from, to string) bool {
	i, j := strings.LastIndex(from, "@"), strings.LastIndex(to, "@")
	return i > 0 && j > 0 && from[:i] == to[:j]
}
