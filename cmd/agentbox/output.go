package main

// How text agentbox did not write itself reaches the user's terminal.
// Everything the agent controls is hostile to it: branch names, paths,
// commit subjects, file names in git's status, log lines, and git's messages
// that echo them. Printing any of it goes through internal/termsafe:
//
//   - esc (termsafe.String) for a value in a line of text output;
//   - writeJSON for every --json output: encoding/json leaves C1 controls and
//     bidirectional overrides raw, termsafe.JSON escapes them;
//   - agentOutput for the agent's own output (run, logs), escaped line by
//     line unless --raw;
//   - run (root.go) prints every error through termsafe.Message, so an error
//     that quotes git or the agent is safe too.
//
//   - the report templates (tmpl/) escape such fields with esc: names and
//     whys of the egress log (blocked), reasons, results and users of the
//     audit log (audit, allow --list); review's templates (explain, diff)
//     escape diff's base and subjects with termsafe.String, or
//     review.MarkdownCode in Markdown;
//   - generate --check prints the diff of the files on disk through
//     termsafe.Message (lines and backslashes kept).
//
// Keep the values raw in the structs that --json prints, and escape where
// they are printed.

import (
	"encoding/json"
	"io"

	"github.com/agentbox-dev/agentbox/internal/termsafe"
)

// esc is s escaped for one field of a line of text output.
func esc(s string) string { return termsafe.String(s) }

// writeJSON writes v as indented JSON, with the C1, bidirectional and other
// unprintable runes that encoding/json leaves raw written as \u escapes.
func writeJSON(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(termsafe.JSON(data), '\n'))
	return err
}

// agentOutput returns the writers for the agent's own stdout and stderr:
// escaped line by line (newlines and tabs kept), or, with raw, stdout and
// stderr themselves. flush writes out what waits for the end of a rune.
func agentOutput(stdout, stderr io.Writer, raw bool) (o, e io.Writer, flush func()) {
	if raw {
		return stdout, stderr, func() {}
	}
	ow := termsafe.NewWriter(stdout)
	if stdout == stderr {
		// One writer: exec copies both streams in one goroutine then.
		return ow, ow, func() { ow.Flush() }
	}
	ew := termsafe.NewWriter(stderr)
	return ow, ew, func() { ow.Flush(); ew.Flush() }
}

// rawFlagUsage is the help of --raw on the commands that show the agent's
// output.
const rawFlagUsage = "pass the agent's output through as it is; raw output may contain escape sequences the agent wrote (default: escaped, \\x1b and \\u{9b}, newlines and tabs kept)"
