// Package yamlpos decodes one YAML document strictly into Go structs and
// reports every problem with its line and column: unknown keys (with a "did
// you mean"), wrong types, duplicate keys, tabs, empty files and extra
// documents. It records the position of every value it decodes, so that
// later validation can point at the value it rejects.
package yamlpos

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Pos is a 1-based line and column; the zero Pos means "no position".
type Pos struct{ Line, Col int }

// Error is one problem found in a file, at a position and a key path such as
// "network.domains[3]".
type Error struct {
	Pos  Pos
	Path string
	Msg  string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Format renders the error as "file:line:col: path: msg", on one line:
// control characters are escaped, whatever the message quotes.
func (e *Error) Format(file string) string {
	msg := oneLine(e.Error())
	switch {
	case e.Pos.Line == 0:
		return file + ": " + msg
	case e.Pos.Col == 0:
		return fmt.Sprintf("%s:%d: %s", file, e.Pos.Line, msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", file, e.Pos.Line, e.Pos.Col, msg)
}

// oneLine escapes control characters, so that text from the file cannot
// break an error message into lines or send terminal escapes.
func oneLine(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Errors is every problem found in one file.
type Errors struct {
	File string
	List []*Error
}

// Add records a problem.
func (es *Errors) Add(pos Pos, path, format string, args ...any) {
	es.List = append(es.List, &Error{Pos: pos, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Err returns nil when no problem was recorded, else es sorted by position.
func (es *Errors) Err() error {
	if len(es.List) == 0 {
		return nil
	}
	sort.SliceStable(es.List, func(i, j int) bool {
		a, b := es.List[i].Pos, es.List[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return es
}

func (es *Errors) Error() string {
	lines := make([]string, len(es.List))
	for i, e := range es.List {
		lines[i] = e.Format(es.File)
	}
	return strings.Join(lines, "\n")
}
