// Package shquote quotes strings as POSIX shell words, so that nothing in
// them is expanded: no $, backquote, glob or word splitting.
package shquote

import "strings"

// plain is what a word may hold and still need no quotes.
const plain = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_"

// Word quotes s as one shell word; words of plain characters stay as they are.
func Word(s string) string {
	if s != "" && strings.Trim(s, plain) == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Words quotes each word and joins them with spaces.
func Words(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = Word(w)
	}
	return strings.Join(q, " ")
}
