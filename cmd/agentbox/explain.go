package main

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

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/review"
	"github.com/spf13/cobra"
)

//go:embed tmpl/*.tmpl
var reportFS embed.FS

// formats are the values of --format of explain and diff.
var formats = []string{"text", "markdown", "json"}

var reportTemplates = template.Must(template.New("").Option("missingkey=error").Funcs(template.FuncMap{
	"join":    strings.Join,
	"ports":   portList,
	"summary": summary,
	"change":  change,
	"negated": func(p string) bool { return strings.HasPrefix(p, "!") },
	"when":    when,
	"port":    portCell,
	"esc":     esc,
	"gains":   gains,
	"md":      review.MarkdownCode,
}).ParseFS(reportFS, "tmpl/*.tmpl"))

func newExplainCmd(dir *string, stdout io.Writer) *cobra.Command {
	var format string
	c := &cobra.Command{
		Use:   "explain",
		Short: "Describe the sandbox that the generated files enforce",
		Long: `Describe the effective sandbox in plain language: every allowed destination
with its ports and where it comes from, what is always refused, the mounts and
the paths agentbox fetch refuses or accepts, the hidden patterns in order with
the effect of each, the credentials, the agent's environment and what each
variable can do, the task time limits, agentbox allow's limits, the Dev
Container's extensions, the user and limits, the profiles, and every pinned
image and version. It reads the same compiled model that generate renders.`,
		Example: `  agentbox explain
  agentbox explain --json | jq '.destinations'
  agentbox explain --format markdown -C path/to/project`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			format, err := outputFormat(c, format)
			if err != nil {
				return err
			}
			s, err := explain(*dir, nil)
			if err != nil {
				return err
			}
			return report(stdout, "explain", format, s)
		},
	}
	formatFlags(c, &format)
	return c
}

// formatFlags adds --format and --json, its short form: --json is the
// spelling of machine output on every command that has one.
func formatFlags(c *cobra.Command, format *string) {
	c.Flags().StringVar(format, "format", "text", "output format: text, markdown or json")
	c.Flags().Bool("json", false, "print JSON (the same as --format json; the shape is in docs/review.md)")
	_ = c.RegisterFlagCompletionFunc("format", completeFrom(formats))
}

// outputFormat is the format that --format and --json ask for.
func outputFormat(c *cobra.Command, format string) (string, error) {
	if !slices.Contains(formats, format) {
		return "", usageErrorf("invalid --format %q: valid values are text, markdown, json", format)
	}
	if asJSON, _ := c.Flags().GetBool("json"); asJSON {
		if c.Flags().Changed("format") && format != "json" {
			return "", usageErrorf("--json is --format json; it goes with no other --format (got %q)", format)
		}
		return "json", nil
	}
	return format, nil
}

// report writes v as JSON or through the template NAME.FORMAT.tmpl; text
// output is aligned on its tabs.
func report(w io.Writer, name, format string, v any) error {
	if format == "json" {
		return writeJSON(w, v)
	}
	if format == "text" {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		defer tw.Flush()
		w = tw
	}
	return reportTemplates.ExecuteTemplate(w, name+"."+format+".tmpl", v)
}

func portList(ports []uint16) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ", ")
}

var digestRe = regexp.MustCompile(`(sha256:[0-9a-f]{12})[0-9a-f]{52}|(sha(?:1|256|384|512)-[0-9A-Za-z+/]{12})[0-9A-Za-z+/]+=*`)

// change is a diff row's from and to, digests and integrities shortened to
// 12 digits. A
// pin shows the image or package once, then the two digests or versions.
func change(r review.DiffRow) string {
	from, to := digestRe.ReplaceAllString(r.From, "$1$2…"), digestRe.ReplaceAllString(r.To, "$1$2…")
	switch {
	case r.From == "":
		return "added: " + to
	case r.To == "":
		return "removed: " + from
	case r.Kind == review.Pinned || r.Kind == review.Risk && samePackage(from, to):
		i, j := strings.LastIndex(from, "@"), strings.LastIndex(to, "@")
		return fmt.Sprintf("%s %s -> %s", from[:i], from[i+1:], to[j+1:])
	}
	return fmt.Sprintf("%s -> %s", from, to)
}

// gains reports whether a row that is not narrowing has words for what
// the agent gains.
func gains(rows []review.DiffRow) bool {
	return slices.ContainsFunc(rows, func(r review.DiffRow) bool { return r.Gain != "" && r.Kind != review.Narrows })
}

// samePackage reports whether two "name@version" values name one package
// (or image, or Debian package) at two versions.
func samePackage(from, to string) bool {
	i, j := strings.LastIndex(from, "@"), strings.LastIndex(to, "@")
	return i > 0 && j > 0 && from[:i] == to[:j]
}

// explain compiles the sandbox as far as its plan and describes it: the
// project in dir, or src when not nil (diff's base, read from git).
func explain(dir string, src *generator.Source) (*review.Sandbox, error) {
	c, err := generator.Compile(dir, generator.CompileOptions{Until: generator.Planned, Source: src})
	if err != nil {
		return nil, err
	}
	return review.Explain(c)
}
