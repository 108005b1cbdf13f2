package review

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/gitgate"
	"github.com/agentbox-dev/agentbox/lockfile"
)

// Diff is what `agentbox diff` reports: the rows that take the sandbox at
// Base to the working tree's, and how many there are of each kind. Its JSON
// form is documented in docs/review.md.
type Diff struct {
	Base    string         `json:"base"`
	Summary map[string]int `json:"summary"` // risks, widens, narrows, changes, pins
	Rows    []DiffRow      `json:"rows"`
}

// summaryKeys are the keys of Diff.Summary, in the order the summary line
// names them.
var summaryKeys = []string{"risks", "widens", "narrows", "changes", "pins"}

// ExplainDir compiles the project in dir as far as its plan and describes
// its sandbox.
func ExplainDir(dir string) (*Sandbox, error) {
	return explainFrom(dir, nil)
}

// explainFrom compiles the sandbox as far as its plan and describes it:
// the project in dir, or src when not nil (diff's base, read from git).
func explainFrom(dir string, src *generator.Source) (*Sandbox, error) {
	c, err := generator.Compile(dir, generator.CompileOptions{Until: generator.Planned, Source: src})
	if err != nil {
		return nil, err
	}
	return Explain(c)
}

// DiffAt compares the sandbox of agentbox.yaml and agentbox.lock at git
// revision base of the repository holding dir (read from git's object
// database, nothing checked out) with the working tree's. An empty base is
// the merge base with the upstream branch, or HEAD; a repository without a
// commit, or a base without agentbox.yaml, is no sandbox: everything widens.
func DiffAt(ctx context.Context, dir, base string) (*Diff, error) {
	head, err := ExplainDir(dir)
	if err != nil {
		return nil, err
	}
	files := make([][]byte, 2)
	if base == "" {
		base = gitgate.DefaultBase(ctx, dir)
	}
	if base == "" {
		base = "(no commit yet)" // a base without a sandbox: everything is added
	} else if files, err = gitgate.ReadAt(ctx, dir, base, config.ConfigFile, lockfile.File); err != nil {
		return nil, err
	}
	var old *Sandbox
	if files[0] != nil {
		name := fmt.Sprintf("%s:%s", base, filepath.ToSlash(filepath.Join(dir, config.ConfigFile)))
		if old, err = explainFrom(".", &generator.Source{File: name, Config: files[0], Lock: files[1]}); err != nil {
			return nil, fmt.Errorf("agentbox.yaml at %s does not load: %s", base, firstErrorLine(err))
		}
	}
	return newDiff(base, DiffSandboxes(old, head)), nil
}

// newDiff counts rows by kind into a Diff against base.
func newDiff(base string, rows []DiffRow) *Diff {
	d := &Diff{Base: base, Rows: rows, Summary: map[string]int{}}
	for _, k := range summaryKeys {
		d.Summary[k] = 0
	}
	for _, row := range rows {
		key := row.Kind
		switch key {
		case Pinned:
			key = "pins"
		case Risk:
			key = "risks"
		}
		d.Summary[key]++
	}
	if rows == nil {
		d.Rows = []DiffRow{}
	}
	return d
}

// firstErrorLine is the first line of err, and how many more there are.
func firstErrorLine(err error) string {
	line, rest, _ := strings.Cut(strings.TrimSpace(err.Error()), "\n")
	if rest != "" {
		return line + fmt.Sprintf(" (and %d more)", strings.Count(rest, "\n")+1)
	}
	return line
}

// SummaryLine is the diff in words: "widens 2, narrows 1, pins 3", or "no
// change to the sandbox".
func (d *Diff) SummaryLine() string {
	if len(d.Rows) == 0 {
		return "no change to the sandbox"
	}
	var parts []string
	for _, k := range summaryKeys {
		if n := d.Summary[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	return strings.Join(parts, ", ")
}
