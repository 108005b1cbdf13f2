package main

import (
	"embed"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"text/template"

	"github.com/agentbox-dev/agentbox/review"
	"github.com/spf13/cobra"
)

//go:embed tmpl/*.tmpl
var reportFS embed.FS

// formats are the values of --format of explain and diff.
var formats = []string{review.Text, review.Markdown, "json"}

var reportTemplates = template.Must(template.New("").Option("missingkey=error").Funcs(template.FuncMap{
	"join":  strings.Join,
	"ports": review.PortList,
	"when":  when,
	"port":  portCell,
	"esc":   esc,
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
			s, err := review.ExplainDir(*dir)
			if err != nil {
				return err
			}
			return reviewReport(stdout, format, s)
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

// reviewReport writes a review view (explain's, diff's) as JSON or as
// review renders it.
func reviewReport(w io.Writer, format string, v interface{ Render(io.Writer, string) error }) error {
	if format == "json" {
		return writeJSON(w, v)
	}
	return v.Render(w, format)
}
