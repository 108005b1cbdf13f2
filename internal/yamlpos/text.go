package yamlpos

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// walk calls fn with every character of data, its byte offset and its
// position, counted as git counts lines: a line ends at LF (CR LF too); a
// column is a character, and a byte that is not UTF-8 counts as one. The
// line breaks that YAML takes and git does not (a lone CR, U+0085, U+2028,
// U+2029) are refused by scanText before the parser runs, so the parser's
// positions agree with these. fn returns false to stop.
func walk(data []byte, fn func(off int, r rune, size int, pos Pos) bool) Pos {
	pos := Pos{1, 1}
	for off := 0; off < len(data); {
		r, size := utf8.DecodeRune(data[off:])
		if !fn(off, r, size, pos) {
			return pos
		}
		off += size
		if r == '\n' {
			pos = Pos{pos.Line + 1, 1}
		} else {
			pos.Col++
		}
	}
	return pos
}

// PosAt returns the position of the byte at offset in data (the position
// just past the end when offset is len(data)).
func PosAt(data []byte, offset int) Pos {
	return walk(data, func(off int, _ rune, _ int, _ Pos) bool { return off < offset })
}

// lastLine is the number of the last line of data that holds anything.
func lastLine(data []byte) int {
	end := PosAt(data, len(data))
	if end.Col == 1 && end.Line > 1 {
		return end.Line - 1
	}
	return end.Line
}

// scanText reports what agentbox.yaml must not contain, each at the line
// and column of the offending byte: a UTF-16 byte order mark, bytes that are
// not UTF-8, characters that YAML does not allow (NUL and other control
// characters), which the parser would report without a place, and tabs,
// which YAML allows in some places but agentbox does not. It reports the
// first such character of each line.
func (d *Decoder) scanText(data []byte) bool {
	if bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff}) {
		d.errs.Add(Pos{1, 1}, "", "the file is UTF-16 (it starts with a UTF-16 byte order mark); save it as UTF-8, the encoding git can diff")
		return true
	}
	found, line := false, 0
	walk(data, func(off int, r rune, size int, pos Pos) bool {
		if pos.Line == line {
			return true // this line is reported already
		}
		msg := badChar(r, size, data[off])
		if r == '\r' && (off+1 == len(data) || data[off+1] != '\n') {
			msg = "a carriage return (U+000D) without a line feed after it" + yamlBreak + `; in a double-quoted string, write it as the escape "\r"`
		}
		if msg != "" {
			d.errs.Add(pos, "", "%s", msg)
			found, line = true, pos.Line
		}
		return true
	})
	return found
}

// yamlBreak says why a line break that YAML takes and git does not is
// refused: a reviewer reading the diff would see one line where agentbox
// reads two, and a key could hide behind a comment.
const yamlBreak = ": YAML ends a line there and git does not; end lines with LF (or CR LF)"

// badChar says what is wrong with character r (size bytes, the first of
// which is b) in agentbox.yaml, or "" if nothing is.
func badChar(r rune, size int, b byte) string {
	switch {
	case r == utf8.RuneError && size == 1:
		return fmt.Sprintf("byte 0x%02x is not UTF-8; the file must be UTF-8 text", b)
	case r == 0:
		return "a NUL byte; the file must be text"
	case r == '\t':
		return "tab character; indent with spaces (tabs are not allowed anywhere in the file)"
	case r == '\n' || r == '\r':
		return "" // a lone CR: scanText
	case r == 0x85 || r == 0x2028 || r == 0x2029:
		name := map[rune]string{0x85: "next line", 0x2028: "line separator", 0x2029: "paragraph separator"}[r]
		return fmt.Sprintf(`%s %U%s; in a double-quoted string, write it as the escape "\u%04x"`, name, r, yamlBreak, r)
	case r < 0x20 || r >= 0x7f && r < 0xa0:
		return fmt.Sprintf(`control character %U is not allowed in YAML; in a double-quoted string, write it as the escape "\x%02x"`, r, r)
	case r >= 0xd800 && r < 0xe000 || r == 0xfffe || r == 0xffff:
		return fmt.Sprintf("character %U is not allowed in YAML", r)
	}
	return ""
}
