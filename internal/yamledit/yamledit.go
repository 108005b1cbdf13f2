// Package yamledit edits a YAML file as text: it adds an entry to a list,
// or removes one, at a path of mapping keys, and leaves every other byte as
// it was (comments, order, indentation, quoting, blank lines). The parser
// (go.yaml.in/yaml/v3) only finds where things are; the edit splices lines
// or characters, in the style of the list's own entries.
package yamledit

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Entry is an entry of a list: a scalar (Ports nil) or a mapping of Key to
// Value and of "ports" to Ports.
type Entry struct {
	Key   string // the key of the mapping form: host, cidr
	Value string
	Ports []int
}

// Item is an entry found in a list: its value (the scalar, or the
// mapping's Key), its ports, and where it starts.
type Item struct {
	Value     string
	Ports     []int
	Line, Col int
}

// Error is a problem at a place of the file.
type Error struct {
	Line, Col int
	Msg       string
}

func (e *Error) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg) }

func errAt(n *yaml.Node, format string, args ...any) error {
	return &Error{n.Line, n.Column, fmt.Sprintf(format, args...)}
}

// doc is a parsed file: its lines (each with its line break) and its tree.
type doc struct {
	lines [][]byte
	eol   string
	root  *yaml.Node // the document's mapping
}

func parse(data []byte) (*doc, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("parsing: %w", err)
	}
	if len(n.Content) != 1 || n.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("the file is not a YAML mapping")
	}
	d := &doc{lines: bytes.SplitAfter(data, []byte("\n")), eol: "\n", root: n.Content[0]}
	if len(d.lines[len(d.lines)-1]) == 0 {
		d.lines = d.lines[:len(d.lines)-1]
	}
	if bytes.Contains(data, []byte("\r\n")) {
		d.eol = "\r\n"
	}
	return d, nil
}

func (d *doc) bytes() []byte { return bytes.Join(d.lines, nil) }

// lookup walks path from the root: the deepest mapping found, the key and
// value nodes of the last key found (nil at the root), and how many keys of
// path it found.
func (d *doc) lookup(path []string) (parent, key, val *yaml.Node, found int, err error) {
	parent = d.root
	for i, k := range path {
		kn, vn := mapGet(parent, k)
		if kn == nil {
			return parent, key, val, i, nil
		}
		key, val = kn, vn
		if i == len(path)-1 {
			return parent, key, val, len(path), nil
		}
		if vn.Kind == yaml.ScalarNode && vn.Tag == "!!null" {
			return parent, key, val, i + 1, nil
		}
		if vn.Kind != yaml.MappingNode {
			return nil, nil, nil, 0, errAt(vn, "%s: expected a mapping", strings.Join(path[:i+1], "."))
		}
		parent = vn
	}
	return parent, key, val, len(path), nil
}

func mapGet(m *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// List returns the items of the list at path (none when it is missing or
// empty).
func List(data []byte, path []string) ([]Item, error) {
	d, err := parse(data)
	if err != nil {
		return nil, err
	}
	_, _, val, found, err := d.lookup(path)
	if err != nil || found < len(path) || val.Kind != yaml.SequenceNode {
		if err == nil && found == len(path) && val.Tag != "!!null" {
			err = errAt(val, "%s: expected a list", strings.Join(path, "."))
		}
		return nil, err
	}
	var items []Item
	for _, n := range val.Content {
		it := Item{Line: n.Line, Col: n.Column, Value: n.Value}
		if n.Kind == yaml.MappingNode {
			it.Value = ""
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if k.Value == "ports" && v.Kind == yaml.SequenceNode {
					for _, p := range v.Content {
						if x, err := strconv.Atoi(p.Value); err == nil {
							it.Ports = append(it.Ports, x)
						}
					}
				} else if v.Kind == yaml.ScalarNode && it.Value == "" && k.Value != "ports" {
					it.Value = v.Value
				}
			}
		}
		items = append(items, it)
	}
	return items, nil
}

// Append returns data with e added at the end of the list at path, which
// it creates (with the mapping keys missing on the way) when it is not
// there.
func Append(data []byte, path []string, e Entry) ([]byte, error) {
	d, err := parse(data)
	if err != nil {
		return nil, err
	}
	parent, key, val, found, err := d.lookup(path)
	if err != nil {
		return nil, err
	}
	if found == len(path) {
		switch {
		case val.Kind == yaml.SequenceNode && val.Style&yaml.FlowStyle != 0:
			return d.appendFlow(val, e)
		case val.Kind == yaml.SequenceNode && len(val.Content) > 0:
			return d.appendBlock(val, e)
		case val.Kind == yaml.SequenceNode || val.Tag == "!!null":
			return d.appendUnder(key, val, nil, e)
		}
		return nil, errAt(val, "%s: expected a list", strings.Join(path, "."))
	}
	if key != nil && val.Tag == "!!null" {
		return d.appendUnder(key, val, path[found:], e)
	}
	if parent.Style&yaml.FlowStyle != 0 {
		return nil, errAt(parent, "%s is written as a flow mapping ({...}); add %s by hand", strings.Join(path[:found], "."), e.Value)
	}
	return d.appendKeys(parent, path[found:], e)
}

// seqStyle is how the file indents: a block list's dash past its key
// (0 for "key:\n- x"), and a mapping's keys past their parent key.
func (d *doc) seqStyle() (seqIndent, mapIndent int) {
	seqIndent, mapIndent = -1, -1
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind != yaml.MappingNode || n.Style&yaml.FlowStyle != 0 {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Line == k.Line || v.Style&yaml.FlowStyle != 0 {
				continue
			}
			switch v.Kind {
			case yaml.SequenceNode:
				if seqIndent < 0 && len(v.Content) > 0 {
					seqIndent = d.dashCol(v.Content[0]) - (k.Column - 1)
				}
			case yaml.MappingNode:
				if mapIndent < 0 {
					mapIndent = v.Column - k.Column
				}
				walk(v)
			}
		}
	}
	walk(d.root)
	if mapIndent <= 0 {
		mapIndent = 2
	}
	if seqIndent < 0 {
		seqIndent = mapIndent
	}
	return seqIndent, mapIndent
}

// dashCol is the 0-based column of the "-" before block item n.
func (d *doc) dashCol(n *yaml.Node) int {
	line := d.lines[n.Line-1]
	off := byteCol(line, n.Column)
	i := bytes.LastIndexByte(line[:off], '-')
	if i < 0 {
		return n.Column - 1
	}
	return utf8.RuneCount(line[:i])
}

// byteCol is the byte offset in line of 1-based character column col.
func byteCol(line []byte, col int) int {
	off := 0
	for c := 1; c < col && off < len(line); c++ {
		_, size := utf8.DecodeRune(line[off:])
		off += size
	}
	return off
}

// indentOf is the number of leading spaces of line.
func indentOf(line []byte) int {
	return len(line) - len(bytes.TrimLeft(line, " "))
}

// blank tells a line that holds nothing but spaces or a comment.
func blank(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) == 0 || t[0] == '#'
}

// blockEnd is the last line (1-based) of the block that starts on line
// start at 0-based column col: the lines after it that are indented past
// col, or blank, up to the last that holds something other than a comment.
func (d *doc) blockEnd(start, col int) int {
	end := start
	for l := start + 1; l <= len(d.lines); l++ {
		line := d.lines[l-1]
		if blank(line) {
			continue
		}
		if indentOf(line) <= col {
			break
		}
		end = l
	}
	return end
}

// insertLines inserts text (lines, each without its line break) after
// line after (0: at the start).
func (d *doc) insertLines(after int, text ...string) {
	if after > 0 && !bytes.HasSuffix(d.lines[after-1], []byte("\n")) {
		d.lines[after-1] = append(bytes.Clone(d.lines[after-1]), d.eol...)
	}
	var add [][]byte
	for _, t := range text {
		add = append(add, []byte(t+d.eol))
	}
	d.lines = append(d.lines[:after], append(add, d.lines[after:]...)...)
}

// appendBlock adds e after the last item of the block list seq.
func (d *doc) appendBlock(seq *yaml.Node, e Entry) ([]byte, error) {
	last := seq.Content[len(seq.Content)-1]
	dash := d.dashCol(last)
	gap := byteCol(d.lines[last.Line-1], last.Column) - dash - 1
	if gap < 1 {
		gap = 1
	}
	pad := strings.Repeat(" ", dash)
	lines := d.blockEntry(seq, e, pad+"-"+strings.Repeat(" ", gap), pad+strings.Repeat(" ", 1+gap))
	d.insertLines(d.blockEnd(last.Line, dash), lines...)
	return d.bytes(), nil
}

// blockEntry writes e as block list lines: first starts the first line,
// rest the others.
func (d *doc) blockEntry(seq *yaml.Node, e Entry, first, rest string) []string {
	value := quote(e.Value, scalarStyle(seq))
	if e.Ports == nil {
		return []string{first + value}
	}
	ports := portsText(e.Ports)
	if flowMappings(seq) {
		return []string{first + "{" + e.Key + ": " + value + ", ports: " + ports + "}"}
	}
	return []string{first + e.Key + ": " + value, rest + "ports: " + ports}
}

// portsText writes ports as a flow list.
func portsText(ports []int) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(p)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// flowMappings tells whether seq's last mapping entry is a flow mapping.
func flowMappings(seq *yaml.Node) bool {
	for i := len(seq.Content) - 1; i >= 0; i-- {
		if n := seq.Content[i]; n.Kind == yaml.MappingNode {
			return n.Style&yaml.FlowStyle != 0
		}
	}
	return false
}

// scalarStyle is the quoting of seq's last scalar value: an entry's own,
// or the value of its mapping.
func scalarStyle(seq *yaml.Node) yaml.Style {
	for i := len(seq.Content) - 1; i >= 0; i-- {
		n := seq.Content[i]
		if n.Kind == yaml.MappingNode && len(n.Content) >= 2 {
			n = n.Content[1]
		}
		if n.Kind == yaml.ScalarNode {
			return n.Style & (yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle)
		}
	}
	return 0
}

// quote writes s in style: plain when it may be, else double quotes.
func quote(s string, style yaml.Style) string {
	switch {
	case style == yaml.SingleQuotedStyle:
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	case style == yaml.DoubleQuotedStyle || !plainOK(s):
		return strconv.Quote(s)
	}
	return s
}

// plainOK tells whether s reads back as the same string when written plain.
func plainOK(s string) bool {
	var v any
	if s == "" || strings.ContainsAny(s, "#,[]{}:\"'&*!|>%@`") || yaml.Unmarshal([]byte("x: "+s), &v) != nil {
		return false
	}
	m, ok := v.(map[string]any)
	got, isStr := m["x"].(string)
	return ok && isStr && got == s
}

// appendFlow adds e before the closing bracket of the flow list seq.
func (d *doc) appendFlow(seq *yaml.Node, e Entry) ([]byte, error) {
	data := d.bytes()
	start := lineOffset(d.lines, seq.Line) + byteCol(d.lines[seq.Line-1], seq.Column)
	end, ok := flowEnd(data, start)
	if !ok {
		return nil, errAt(seq, "cannot find the end of this list")
	}
	value := quote(e.Value, scalarStyle(seq))
	text := value
	if e.Ports != nil {
		text = "{" + e.Key + ": " + value + ", ports: " + portsText(e.Ports) + "}"
	}
	at := end
	for at > start+1 && (data[at-1] == ' ' || data[at-1] == '\n' || data[at-1] == '\r') {
		at--
	}
	if len(seq.Content) > 0 {
		if data[at-1] == ',' {
			text = " " + text
		} else {
			text = ", " + text
		}
	}
	out := append(append(bytes.Clone(data[:at]), text...), data[at:]...)
	return out, nil
}

// lineOffset is the byte offset of the start of line (1-based).
func lineOffset(lines [][]byte, line int) int {
	off := 0
	for _, l := range lines[:line-1] {
		off += len(l)
	}
	return off
}

// flowEnd finds the bracket or brace that closes the one at start.
func flowEnd(data []byte, start int) (int, bool) {
	depth := 0
	for i := start; i < len(data); i++ {
		switch c := data[i]; c {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return i, true
			}
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case '\'':
			for i++; i < len(data); i++ {
				if data[i] == '\'' {
					if i+1 < len(data) && data[i+1] == '\'' {
						i++
						continue
					}
					break
				}
			}
		case '#':
			if i > 0 && (data[i-1] == ' ' || data[i-1] == '\n') {
				for i < len(data) && data[i] != '\n' {
					i++
				}
			}
		}
	}
	return 0, false
}

// appendUnder writes the keys of rest under key, whose value val is empty
// (null or []), then the list with e (under key itself when rest is
// empty): the empty value goes, the rest goes on lines of its own.
func (d *doc) appendUnder(key, val *yaml.Node, rest []string, e Entry) ([]byte, error) {
	line := d.lines[key.Line-1]
	if val.Line == key.Line && (val.Kind == yaml.SequenceNode || val.Value != "") {
		// key: [] or key: ~ or key: null: the value goes.
		off := byteCol(line, val.Column)
		end := off + len(val.Value)
		if val.Kind == yaml.SequenceNode {
			end = off + bytes.IndexByte(line[off:], ']') + 1
		} else if val.Value == "" || line[off] != val.Value[0] {
			end = off + 1 // ~
		}
		for off > 0 && line[off-1] == ' ' {
			off--
		}
		nl := bytes.Clone(line[:off])
		nl = append(nl, line[end:]...)
		d.lines[key.Line-1] = nl
	}
	seqIndent, mapIndent := d.seqStyle()
	col := key.Column - 1
	var lines []string
	for _, k := range rest {
		col += mapIndent
		lines = append(lines, strings.Repeat(" ", col)+k+":")
	}
	pad := strings.Repeat(" ", col+seqIndent)
	lines = append(lines, d.blockEntry(&yaml.Node{}, e, pad+"- ", pad+"  ")...)
	d.insertLines(d.blockEnd(key.Line, key.Column-1), lines...)
	return d.bytes(), nil
}

// appendKeys writes the keys of path under mapping parent, then the list
// with e: after parent's last line, or at the end of the file for the
// root.
func (d *doc) appendKeys(parent *yaml.Node, path []string, e Entry) ([]byte, error) {
	seqIndent, mapIndent := d.seqStyle()
	col, after := 0, len(d.lines)
	if parent != d.root {
		col = parent.Content[0].Column - 1
		after = d.blockEnd(parent.Content[0].Line, col-1)
	}
	var lines []string
	for i, k := range path {
		lines = append(lines, strings.Repeat(" ", col+i*mapIndent)+k+":")
	}
	pad := strings.Repeat(" ", col+(len(path)-1)*mapIndent+seqIndent)
	lines = append(lines, d.blockEntry(&yaml.Node{}, e, pad+"- ", pad+"  ")...)
	d.insertLines(after, lines...)
	return d.bytes(), nil
}

// Remove returns data without item index of the list at path; the list of
// a last item removed is left empty ([]).
func Remove(data []byte, path []string, index int) ([]byte, error) {
	d, err := parse(data)
	if err != nil {
		return nil, err
	}
	_, key, val, found, err := d.lookup(path)
	if err != nil {
		return nil, err
	}
	if found < len(path) || val.Kind != yaml.SequenceNode || index < 0 || index >= len(val.Content) {
		return nil, fmt.Errorf("%s has no item %d", strings.Join(path, "."), index)
	}
	if val.Style&yaml.FlowStyle != 0 {
		return d.removeFlow(val, index)
	}
	item := val.Content[index]
	dash := d.dashCol(item)
	first, last := item.Line, d.blockEnd(item.Line, dash)
	// The comment lines right above the item, at its indentation, are its.
	for first > 1 && indentOf(d.lines[first-2]) == dash && bytes.HasPrefix(bytes.TrimSpace(d.lines[first-2]), []byte("#")) {
		first--
	}
	d.lines = append(d.lines[:first-1], d.lines[last:]...)
	if len(val.Content) == 1 {
		line := d.lines[key.Line-1]
		off := byteCol(line, key.Column)
		colon := off + bytes.IndexByte(line[off:], ':') + 1
		nl := append(bytes.Clone(line[:colon]), " []"...)
		d.lines[key.Line-1] = append(nl, line[colon:]...)
	}
	return d.bytes(), nil
}

// removeFlow removes item index of the flow list seq, with a comma.
func (d *doc) removeFlow(seq *yaml.Node, index int) ([]byte, error) {
	data := d.bytes()
	item := seq.Content[index]
	start := lineOffset(d.lines, item.Line) + byteCol(d.lines[item.Line-1], item.Column)
	end := itemEnd(data, start, item)
	if index+1 < len(seq.Content) {
		next := seq.Content[index+1]
		end = lineOffset(d.lines, next.Line) + byteCol(d.lines[next.Line-1], next.Column)
	} else if index > 0 {
		prev := seq.Content[index-1]
		start = itemEnd(data, lineOffset(d.lines, prev.Line)+byteCol(d.lines[prev.Line-1], prev.Column), prev)
	}
	return append(bytes.Clone(data[:start]), data[end:]...), nil
}

// itemEnd is the offset just past the flow item n that starts at start.
func itemEnd(data []byte, start int, n *yaml.Node) int {
	switch {
	case n.Kind != yaml.ScalarNode:
		end, _ := flowEnd(data, start)
		return end + 1
	case data[start] == '"' || data[start] == '\'':
		q := data[start]
		for i := start + 1; i < len(data); i++ {
			if q == '"' && data[i] == '\\' {
				i++
			} else if data[i] == q {
				if q == '\'' && i+1 < len(data) && data[i+1] == '\'' {
					i++
					continue
				}
				return i + 1
			}
		}
		return len(data)
	}
	i := start
	for i < len(data) && !bytes.ContainsRune([]byte(",]}\n"), rune(data[i])) {
		i++
	}
	for i > start && data[i-1] == ' ' {
		i--
	}
	return i
}
