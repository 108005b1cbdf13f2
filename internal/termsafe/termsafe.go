// Package termsafe owns how text that agentbox does not write itself reaches
// a terminal: branch names, paths, commit subjects, log lines and messages
// echoed from git or the agent. Such text may hold escape sequences (OSC 52
// writes the user's clipboard, CSI moves the cursor and erases), C1 controls
// that a terminal takes for ESC [, bidirectional overrides that make a name
// read as another, and invalid UTF-8. String escapes all of it, one rule for
// every field; Lines and Writer do the same but keep the line structure of a
// log; JSON does it for JSON text.
//
// The rule, for a terminal that decodes UTF-8:
//
//   - kept as they are: printable ASCII (space to ~) but the backslash, and
//     every other rune that unicode.IsPrint accepts (letters, marks,
//     numbers, punctuation, symbols);
//   - \ is written \\; newline, tab and carriage return \n, \t, \r (Lines
//     keeps newline and tab as they are);
//   - every other byte below 0x20, DEL, and every byte that is not part of
//     valid UTF-8 (a raw C1 byte 0x80-0x9f among them) is written \xNN;
//   - every other rune is written \u{N} in hex: the C1 controls U+0080 to
//     U+009F, the format characters (bidirectional controls U+061C, U+200E,
//     U+200F, U+202A-U+202E, U+2066-U+2069; zero-width U+200B-U+200D,
//     U+2060, U+FEFF; tags), spaces other than U+0020, line and paragraph
//     separators, private use and unassigned code points.
//
// So the result is valid UTF-8 with no control character, and two different
// inputs never give the same result: every backslash starts an escape.
//
// Message is the one exception to the backslash rule: it is for agentbox's
// own messages (errors), which quote values with Go's escapes already and
// may carry text from git or the agent; it keeps newlines, tabs and
// backslashes, and escapes the rest as Lines does. Safe, but not one to one.
package termsafe

import (
	"io"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// mode says what an escape keeps as it is.
type mode int

const (
	field   mode = iota // nothing: one line
	lines               // newlines and tabs
	message             // newlines, tabs and backslashes
)

// String returns s escaped for a one-line field of text output.
func String(s string) string { return escape(s, field) }

// Lines returns s escaped as String does, but with newlines and tabs kept:
// for a log of several lines.
func Lines(s string) string { return escape(s, lines) }

// Message returns s escaped as Lines does, but with backslashes kept: for
// agentbox's own messages, which quote values with Go's escapes.
func Message(s string) string { return escape(s, message) }

func escape(s string, m mode) string {
	if plain(s, m) {
		return s
	}
	return string(appendEscaped(nil, s, m))
}

// plain reports whether s is its own escape.
func plain(s string, m mode) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && !(m != field && (c == '\n' || c == '\t')) || c >= 0x7f || c == '\\' && m != message {
			return false
		}
	}
	return true
}

// appendEscaped appends the escape of s to dst.
func appendEscaped(dst []byte, s string, m mode) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case m != field && (c == '\n' || c == '\t') || m == message && c == '\\':
				dst = append(dst, c)
			case c == '\\':
				dst = append(dst, `\\`...)
			case c == '\n':
				dst = append(dst, `\n`...)
			case c == '\t':
				dst = append(dst, `\t`...)
			case c == '\r':
				dst = append(dst, `\r`...)
			case c < 0x20 || c == 0x7f:
				dst = appendByte(dst, c)
			default:
				dst = append(dst, c)
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			dst = appendByte(dst, c)
		case unicode.IsPrint(r):
			dst = append(dst, s[i:i+n]...)
		default:
			dst = append(dst, `\u{`...)
			dst = strconv.AppendInt(dst, int64(r), 16)
			dst = append(dst, '}')
		}
		i += n
	}
	return dst
}

func appendByte(dst []byte, c byte) []byte {
	const hex = "0123456789abcdef"
	return append(dst, '\\', 'x', hex[c>>4], hex[c&0xf])
}

// Writer escapes what is written through it as Lines does and passes it
// on. A rune split between two writes is escaped whole: the start of an
// incomplete UTF-8 sequence waits for the next write, or for Flush.
type Writer struct {
	w       io.Writer
	pending []byte // at most utf8.UTFMax-1 bytes
	buf     []byte
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes it on. It returns len(p) when the escape was
// written whole.
func (e *Writer) Write(p []byte) (int, error) {
	data := append(e.pending, p...)
	cut := len(data) - incompleteTail(data)
	e.buf = appendEscaped(e.buf[:0], string(data[:cut]), lines)
	e.pending = append(e.pending[:0:0], data[cut:]...)
	if _, err := e.w.Write(e.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what waits for the rest of a rune, escaped as the invalid
// bytes it is.
func (e *Writer) Flush() error {
	if len(e.pending) == 0 {
		return nil
	}
	e.buf = appendEscaped(e.buf[:0], string(e.pending), lines)
	e.pending = e.pending[:0]
	_, err := e.w.Write(e.buf)
	return err
}

// incompleteTail is the length of the start of a UTF-8 sequence that ends
// b and that more bytes could complete; 0 if none.
func incompleteTail(b []byte) int {
	for n := 1; n < utf8.UTFMax && n <= len(b); n++ {
		c := b[len(b)-n]
		if c&0xc0 == 0x80 {
			continue // a continuation byte: look further back
		}
		if c >= 0xc2 && c <= 0xf4 && !utf8.FullRune(b[len(b)-n:]) {
			return n
		}
		return 0
	}
	return 0
}

// JSON returns the JSON text data (as json.Marshal writes it) with every
// rune String would escape that encoding/json leaves raw written as a \u
// escape: DEL, the C1 controls, the format characters (bidirectional and
// zero-width ones), the other unprintable runes, and invalid UTF-8 (as
// U+FFFD). Outside strings a JSON text is ASCII, so each is inside a
// string, and the text decodes to the same values.
func JSON(data []byte) []byte {
	out := make([]byte, 0, len(data))
	for i := 0; i < len(data); {
		c := data[i]
		if c < utf8.RuneSelf {
			if c == 0x7f {
				out = appendU(out, 0x7f)
			} else {
				out = append(out, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = appendU(out, utf8.RuneError)
		case unicode.IsPrint(r):
			out = append(out, data[i:i+n]...)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = appendU(appendU(out, r1), r2)
		default:
			out = appendU(out, r)
		}
		i += n
	}
	return out
}

func appendU(dst []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(dst, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}
