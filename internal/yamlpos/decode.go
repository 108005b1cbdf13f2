package yamlpos

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Positions maps a key path ("network.domains[3]") to the position of its value.
type Positions map[string]Pos

// Unmarshaler is implemented by types that accept more than one YAML form,
// such as a domain written either as a string or as a mapping.
type Unmarshaler interface {
	UnmarshalNode(d *Decoder, n *yaml.Node, path string)
}

// Decoder walks yaml.Node trees into Go values, collecting every error.
type Decoder struct {
	errs *Errors
	pos  Positions
}

// Decode parses data, which must hold exactly one YAML document whose root
// is a mapping, strictly into v (a pointer to a struct). The error, if any,
// is an *Errors listing every problem found, sorted by position.
func Decode(file string, data []byte, v any) (Positions, error) {
	d := &Decoder{errs: &Errors{File: file}, pos: Positions{}}
	if d.scanText(data) {
		return d.pos, d.errs.Err()
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	err := dec.Decode(&doc)
	switch {
	case errors.Is(err, io.EOF) || (err == nil && len(doc.Content) == 0):
		d.errs.Add(Pos{1, 1}, "", "the file is empty")
		return d.pos, d.errs.Err()
	case err != nil:
		d.syntaxError(data, err)
		return d.pos, d.errs.Err()
	}
	var second yaml.Node
	switch err := dec.Decode(&second); {
	case err == nil:
		d.errs.Add(Pos{second.Line, second.Column}, "", "a second YAML document; the file must hold exactly one")
	case !errors.Is(err, io.EOF):
		d.syntaxError(data, err)
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		d.errs.Add(Pos{root.Line, root.Column}, "", "the file is empty")
	} else {
		d.DecodeInto(root, "", v)
	}
	return d.pos, d.errs.Err()
}

// Errorf records a problem at n.
func (d *Decoder) Errorf(n *yaml.Node, path, format string, args ...any) {
	d.errs.Add(Pos{n.Line, n.Column}, path, format, args...)
}

// DecodeInto decodes n into the value ptr points to, recording path's position.
func (d *Decoder) DecodeInto(n *yaml.Node, path string, ptr any) {
	d.decode(n, path, reflect.ValueOf(ptr).Elem())
}

// IsNull reports whether n is an explicit or implicit null.
func IsNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

var unmarshalerType = reflect.TypeFor[Unmarshaler]()

// decode decodes n into v, after recording path's position and refusing
// anchors and aliases: through v's UnmarshalNode if it has one, else by v's
// kind.
func (d *Decoder) decode(n *yaml.Node, path string, v reflect.Value) {
	d.pos[path] = Pos{n.Line, n.Column}
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		d.Errorf(n, path, "anchors and aliases are not supported")
		return
	}
	if v.CanAddr() && v.Addr().Type().Implements(unmarshalerType) {
		v.Addr().Interface().(Unmarshaler).UnmarshalNode(d, n, path)
		return
	}
	if IsNull(n) && isSection(v.Type()) {
		return // not set: the default applies
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, path, v.Elem())
	case reflect.Struct:
		d.decodeStruct(n, path, v)
	case reflect.Slice:
		d.decodeSlice(n, path, v)
	case reflect.Map:
		d.decodeMap(n, path, v)
	default:
		d.decodeScalar(n, path, v)
	}
}

// decodeSlice decodes the list n into v, entry by entry.
func (d *Decoder) decodeSlice(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.SequenceNode {
		d.Errorf(n, path, "expected a list, got %s", Describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, c := range n.Content {
		d.decode(c, fmt.Sprintf("%s[%d]", path, i), s.Index(i))
	}
	v.Set(s)
}

// decodeScalar decodes the scalar n into v, a string, int, float64 or
// bool, which n's tag must match (an integer is a number too).
func (d *Decoder) decodeScalar(n *yaml.Node, path string, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if s, ok := d.Scalar(n, path, "!!str", "a string"); ok {
			v.SetString(s)
		}
	case reflect.Int:
		if s, ok := d.Scalar(n, path, "!!int", "an integer"); ok {
			i, err := strconv.ParseInt(s, 0, 64)
			if err != nil {
				d.Errorf(n, path, "integer %s is out of range", s)
				return
			}
			v.SetInt(i)
		}
	case reflect.Float64:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
			n = &yaml.Node{Kind: n.Kind, Tag: "!!float", Value: n.Value, Line: n.Line, Column: n.Column}
		}
		if s, ok := d.Scalar(n, path, "!!float", "a number"); ok {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				d.Errorf(n, path, "invalid number %s", s)
				return
			}
			v.SetFloat(f)
		}
	case reflect.Bool:
		if s, ok := d.Scalar(n, path, "!!bool", "a boolean"); ok {
			v.SetBool(s == "true")
		}
	default:
		panic(fmt.Sprintf("yamlpos: unsupported type %s at %s", v.Type(), path))
	}
}

// isSection reports whether a value of type t is a section (a struct), a
// list or a map, or a pointer to one: where nothing after the key (null)
// means that the key is not set and its default applies. A scalar needs a
// value: "agent:" or "agent: ~" is an error, not the default agent.
func isSection(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Slice, reflect.Map:
		return true
	}
	return false
}

// Scalar returns n's text when n is a scalar with the given tag, and records
// an error naming want otherwise.
func (d *Decoder) Scalar(n *yaml.Node, path, tag, want string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != tag {
		hint := ""
		switch {
		case IsNull(n) && !strings.HasSuffix(path, "]"): // a key's value, not a list's entry
			hint = "; give it a value, or leave the key out for its default"
		case tag == "!!str" && n.Kind == yaml.ScalarNode && !IsNull(n):
			hint = fmt.Sprintf(" (quote it: %q)", n.Value)
		}
		d.Errorf(n, path, "expected %s, got %s%s", want, Describe(n), hint)
		return "", false
	}
	return n.Value, true
}

func (d *Decoder) decodeStruct(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, path, "expected a mapping, got %s", Describe(n))
		return
	}
	fields := map[string]int{}
	var names []string
	for i := range v.NumField() {
		tag := v.Type().Field(i).Tag.Get("yaml")
		if tag == "" || tag == "-" {
			continue
		}
		fields[tag] = i
		names = append(names, tag)
	}
	sort.Strings(names)
	d.EachKey(n, path, func(key string, k, val *yaml.Node) {
		i, ok := fields[key]
		if !ok {
			d.unknownKey(k, path, key, names)
			return
		}
		d.decode(val, Join(path, key), v.Field(i))
	})
}

func (d *Decoder) decodeMap(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, path, "expected a mapping, got %s", Describe(n))
		return
	}
	if v.Type().Key().Kind() != reflect.String {
		panic(fmt.Sprintf("yamlpos: unsupported map type %s at %s", v.Type(), path))
	}
	m := reflect.MakeMap(v.Type())
	d.EachKey(n, path, func(key string, k, val *yaml.Node) {
		p := Join(path, key)
		d.pos[p] = Pos{val.Line, val.Column}
		if v.Type().Elem().Kind() != reflect.String {
			// A map of sections: each value decodes like any other.
			elem := reflect.New(v.Type().Elem()).Elem()
			d.decode(val, p, elem)
			m.SetMapIndex(reflect.ValueOf(key), elem)
			return
		}
		switch val.Tag {
		case "!!str", "!!int", "!!float", "!!bool": // written as text, as in the file
		case "!!null":
			d.Errorf(val, p, `expected a string, got nothing (null); write a value, or "" for an empty one`)
			return
		default:
			d.Errorf(val, p, "expected a string, got %s", Describe(val))
			return
		}
		m.SetMapIndex(reflect.ValueOf(key), reflect.ValueOf(val.Value))
	})
	v.Set(m)
}

// EachKey calls fn for every key of mapping n in order, after reporting
// non-string keys, duplicate keys and merge keys.
func (d *Decoder) EachKey(n *yaml.Node, path string, fn func(key string, k, v *yaml.Node)) {
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			d.Errorf(k, path, "expected a string key, got %s", Describe(k))
			continue
		}
		if k.Value == "<<" {
			d.Errorf(k, path, "merge keys (<<) are not supported")
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.Errorf(k, Join(path, k.Value), "duplicate key (first defined at line %d)", first.Line)
			continue
		}
		seen[k.Value] = k
		fn(k.Value, k, val)
	}
}

func (d *Decoder) unknownKey(k *yaml.Node, path, key string, valid []string) {
	if s := Suggest(key, valid); s != "" {
		d.Errorf(k, path, "unknown key %+q; did you mean %q?", key, s)
		return
	}
	d.Errorf(k, path, "unknown key %+q; valid keys are %s", key, Quoted(valid))
}

// Describe names the kind of a node for error messages.
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.Tag {
	case "!!str":
		return fmt.Sprintf("the string %q", n.Value)
	case "!!int":
		return "the integer " + n.Value
	case "!!float":
		return "the number " + n.Value
	case "!!bool":
		return "the boolean " + n.Value
	case "!!null":
		return "nothing (null)"
	}
	return fmt.Sprintf("a value tagged %q", n.Tag)
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_@/:+-][A-Za-z0-9_@/:.+-]*$`)

// Join appends key to path; a key that is not plain is quoted, so that no
// user-written byte reaches an error message unescaped.
func Join(path, key string) string {
	if !plainKey.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// parserErrors are the problems that go.yaml.in/yaml/v3's parser (as
// opposed to its scanner) reports. It numbers their lines from 0, and
// leaves the line out of any error on its line 0.
var parserErrors = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %TAG directive":         true,
	"found undefined tag handle":             true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
}

var (
	yamlLine      = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	unknownAnchor = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)
)

// syntaxError records err, an error of the YAML parser, at its line: the
// parser gives no column. scanText has reported everything the parser
// would report without a line, but for a line of 0 and aliases.
func (d *Decoder) syntaxError(data []byte, err error) {
	msg := err.Error()
	if m := unknownAnchor.FindStringSubmatch(msg); m != nil {
		d.errs.Add(aliasPos(data, m[1]), "", "alias *%s names no anchor (anchors and aliases are not supported)", m[1])
		return
	}
	line, text := 1, strings.TrimPrefix(msg, "yaml: ")
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		text = m[2]
		if parserErrors[text] {
			line++
		}
	}
	d.errs.Add(Pos{Line: min(line, lastLine(data))}, "", "invalid YAML: %s", text)
}

// aliasPos returns the position of the first alias *name in data, or 1:1.
func aliasPos(data []byte, name string) Pos {
	re := regexp.MustCompile(`\*` + regexp.QuoteMeta(name) + `($|[\s,\]}])`)
	if loc := re.FindIndex(data); loc != nil {
		return PosAt(data, loc[0])
	}
	return Pos{1, 1}
}
