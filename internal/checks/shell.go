package checks

import (
	"bytes"
	"fmt"

	"mvdan.cc/sh/v3/syntax"
)

// Shell parses a script with mvdan.cc/sh/v3/syntax in the bash dialect.
// name is the script's file name; parse errors read
// "shell: NAME:LINE:COL: message".
func Shell(data []byte, name string) error {
	p := syntax.NewParser(syntax.Variant(syntax.LangBash))
	if _, err := p.Parse(bytes.NewReader(data), name); err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	return nil
}
