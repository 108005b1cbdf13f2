package termsafe

import (
	"bytes"
	"encoding/json"
	"maps"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for in, want := range map[string]string{
		"":                            "",
		"feature/x":                   "feature/x",
		"café ü 日本":                   "café ü 日本",
		"a b":                         "a b",
		`back\slash`:                  `back\\slash`,
		"a\nb\tc\rd":                  `a\nb\tc\rd`,
		"\x1b]52;c;aGk=\a":            `\x1b]52;c;aGk=\x07`, // OSC 52: the clipboard
		"\x1b[2J":                     `\x1b[2J`,
		"\x9b2J":                      `\x9b2J`,   // C1 CSI as a raw byte (invalid UTF-8)
		"\u009b2J":                    `\u{9b}2J`, // C1 CSI encoded in UTF-8
		"\xc2":                        `\xc2`,     // a sequence cut short
		"\xff\xfe":                    `\xff\xfe`, //
		"\ufffd":                      "\ufffd",   // a real U+FFFD is printable
		"abc\u202egnp.exe":            `abc\u{202e}gnp.exe`,
		"a\u200bb\u2066c\u2069\ufeff": `a\u{200b}b\u{2066}c\u{2069}\u{feff}`,
		"\u061c\u200e\u200f":          `\u{61c}\u{200e}\u{200f}`,
		"nb\u00a0sp\u2028":            `nb\u{a0}sp\u{2028}`,
		"\x7f\x00":                    `\x7f\x00`,
		"tag\U000e0041":               `tag\u{e0041}`,
		"\\x1b":                       `\\x1b`, // the text \x1b is not ESC
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestLines(t *testing.T) {
	in := "line 1\tok\n\x1b[31mred\x1b[0m\r\nend\u009b"
	want := "line 1\tok\n\\x1b[31mred\\x1b[0m\\r\nend\\u{9b}"
	if got := Lines(in); got != want {
		t.Errorf("Lines(%q) = %q, want %q", in, got, want)
	}
}

func TestMessage(t *testing.T) {
	in := "invalid domain \"\\u212aubernetes.io\"\n\tfrom git: \x9b2J\u202e\x1b"
	want := "invalid domain \"\\u212aubernetes.io\"\n\tfrom git: \\x9b2J\\u{202e}\\x1b"
	if got := Message(in); got != want {
		t.Errorf("Message(%q) = %q, want %q", in, got, want)
	}
}

// TestWriterSplitsRunes writes s in every two pieces: the output is
// Lines(s) however it was cut.
func TestWriterSplitsRunes(t *testing.T) {
	s := "é\u009b\xc3\u202e日\U0001f600\x1b\n"
	for cut := range len(s) + 1 {
		var b bytes.Buffer
		w := NewWriter(&b)
		if n, err := w.Write([]byte(s[:cut])); n != cut || err != nil {
			t.Fatal(n, err)
		}
		w.Write([]byte(s[cut:]))
		w.Flush()
		if b.String() != Lines(s) {
			t.Errorf("cut at %d: %q, want %q", cut, b.String(), Lines(s))
		}
	}
}

func TestJSON(t *testing.T) {
	in := struct{ S string }{"\u009b\x1b\x7f\u202e\u200b\xff\U000e0041é<\u2028"}
	data, _ := json.Marshal(in)
	got := string(JSON(data))
	want := `{"S":"\u009b\u001b\u007f\u202e\u200b\ufffd\udb40\udc41é\u003c\u2028"}`
	if got != want {
		t.Errorf("JSON(%s) = %s, want %s", data, got, want)
	}
}

// unescape reads String's or Lines' output back; ok is false when it is
// not such output.
func unescape(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			i++
			continue
		}
		if i+1 >= len(s) {
			return "", false
		}
		switch s[i+1] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'x':
			if i+4 > len(s) {
				return "", false
			}
			v, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
			if err != nil {
				return "", false
			}
			b.WriteByte(byte(v))
			i += 4
			continue
		case 'u':
			end := strings.IndexByte(s[i:], '}')
			if s[i+2] != '{' || end < 0 {
				return "", false
			}
			v, err := strconv.ParseUint(s[i+3:i+end], 16, 32)
			if err != nil {
				return "", false
			}
			b.WriteRune(rune(v))
			i += end + 1
			continue
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// checkSafe fails when out holds anything a terminal would act on: invalid
// UTF-8, a control character (but newline and tab in layout mode), a
// format character or any other rune unicode.IsPrint refuses.
func checkSafe(t *testing.T, in, out string, layout bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("escape of %q is not valid UTF-8: %q", in, out)
	}
	for _, r := range out {
		if layout && (r == '\n' || r == '\t') {
			continue
		}
		if !unicode.IsPrint(r) || unicode.Is(unicode.Cf, r) || unicode.IsControl(r) {
			t.Fatalf("escape of %q holds %U: %q", in, r, out)
		}
	}
	for i := 0; i < len(out); i++ {
		if c := out[i]; c < 0x20 && !(layout && (c == '\n' || c == '\t')) || c == 0x7f {
			t.Fatalf("escape of %q holds byte %#x: %q", in, c, out)
		}
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{
		"plain", "\x1b]52;c;ZWNobyBvd25lZA==\a", "\x1b]52;c;aGk=\x1b\\", "\x1b[2J\x1b[H", "\x9b31m", "\u009b31m",
		"\xc2\x9b", "a\u202eb", "\u2066x\u2069", "\u200b\ufeff", "\\u{9b}", "\\x9b", "\xf0\x9f\x98", "\xed\xa0\x80",
		"line\nline\r\n\tx", "\U000e0001\U000e0041",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, layout := range []bool{false, true} {
			out := String(s)
			if layout {
				out = Lines(s)
			}
			checkSafe(t, s, out, layout)
			back, ok := unescape(out)
			if !ok || back != s {
				t.Fatalf("escape of %q = %q reads back as %q (%v): two inputs could give one output", s, out, back, ok)
			}
		}
		checkSafe(t, s, Message(s), true)
		var b bytes.Buffer
		w := NewWriter(&b)
		half := len(s) / 2
		w.Write([]byte(s[:half]))
		w.Write([]byte(s[half:]))
		w.Flush()
		if b.String() != Lines(s) {
			t.Fatalf("Writer wrote %q, Lines %q", b.String(), Lines(s))
		}
		data, err := json.Marshal(map[string]string{s: s})
		if err != nil {
			t.Fatal(err)
		}
		j := JSON(data)
		var orig, back map[string]string
		if err := json.Unmarshal(data, &orig); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(j, &back); err != nil || !maps.Equal(orig, back) {
			t.Fatalf("JSON(%s) = %s decodes to %q (%v), the original to %q", data, j, back, err, orig)
		}
		checkSafe(t, string(data), string(j), false)
	})
}
