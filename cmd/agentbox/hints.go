package main

// Hints for the common mistakes of a new user, where cobra's or Docker's
// own error would leave them guessing. The others live where the error is
// made: no sandbox running (sandbox.ErrNoSandbox), no agentbox.yaml here but above
// (generator.MissingConfig).

import (
	"strings"

	"github.com/agentbox-dev/agentbox/internal/shquote"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// takesCommand annotates the commands whose arguments are a command line
// of their own, after -- (run, shell).
const takesCommand = "agentbox.takes-command"

// flagError is a flag that cobra could not parse.
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

// dashDashHint is the hint for a command line whose CMD's own flags were
// read as agentbox's (agentbox run claude -p x): the line again, with --
// before CMD. It is "" when the line has -- already, when the command takes
// no CMD, or when the flag agentbox does not know comes before any CMD (a
// mistyped flag of agentbox's own).
func dashDashHint(root *cobra.Command, args []string) string {
	c, _, err := root.Find(args)
	if err != nil || c.Annotations[takesCommand] == "" {
		return ""
	}
	for _, a := range args {
		if a == "--" {
			return ""
		}
	}
	i := skipFlags(root.PersistentFlags(), args, 0)
	if i >= len(args) || args[i] != c.Name() {
		return ""
	}
	j := skipFlags(c.Flags(), args, i+1)
	if j >= len(args) || strings.HasPrefix(args[j], "-") {
		return ""
	}
	line := append(append([]string{"agentbox"}, args[:j]...), "--")
	line = append(line, args[j:]...)
	return "agentbox: the flags after the command were read as agentbox's; put -- before the command, so that its flags are its own: " + shquote.Words(line)
}

// skipFlags returns the index of the first argument from i on that is not
// one of fs's flags or a flag's value.
func skipFlags(fs *pflag.FlagSet, args []string, i int) int {
	for ; i < len(args); i++ {
		a := args[i]
		var f *pflag.Flag
		switch {
		case strings.HasPrefix(a, "--"):
			name, _, hasValue := strings.Cut(a[2:], "=")
			if f = fs.Lookup(name); f != nil && hasValue {
				continue
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if f = fs.ShorthandLookup(a[1:2]); f != nil && len(a) > 2 {
				continue // -Cdir
			}
		}
		if f == nil {
			return i
		}
		if f.NoOptDefVal == "" {
			i++ // the flag's value
		}
	}
	return i
}
