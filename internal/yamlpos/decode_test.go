package yamlpos

import (
	"strings"
	"testing"

	_ "github.com/agentbox-dev/agentbox/internal/testing/golden"
)

type testDoc struct {
	Name  *string           `yaml:"name"`
	Count int               `yaml:"count"`
	Tags  []string          `yaml:"tags"`
	Env   map[string]string `yaml:"env"`
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "f.yaml:1:1: the file is empty"},
		{"# only a comment\n", "f.yaml:1:1: the file is empty"},
		{"nmae: x\n", `f.yaml:1:1: unknown key "nmae"; did you mean "name"?`},
		{"n\u0430me: x\n", `f.yaml:1:1: unknown key "n\u0430me"; did you mean "name"?`}, // CYRILLIC SMALL LETTER A, shown escaped
		{"zzz: x\n", `f.yaml:1:1: unknown key "zzz"; valid keys are "count", "env", "name", "tags"`},
		{"name: 1\n", `f.yaml:1:7: name: expected a string, got the integer 1 (quote it: "1")`},
		{"count: x\n", `f.yaml:1:8: count: expected an integer, got the string "x"`},
		{"tags: x\n", `f.yaml:1:7: tags: expected a list, got the string "x"`},
		{"name: a\nname: b\n", "f.yaml:2:1: name: duplicate key (first defined at line 1)"},
		{"name:\ta\n", "f.yaml:1:6: tab character"},
		{"name: a\n---\nname: b\n", "f.yaml:2:1: a second YAML document"},
		{"tags: &a [x]\n", "f.yaml:1:7: tags: anchors and aliases are not supported"},
		{"- a\n", "f.yaml:1:1: expected a mapping, got a list"},
		{"name: [\n", "f.yaml:1: invalid YAML"},
		{"env: {\"a\\nb\": !x y}\n", `f.yaml:1:15: env["a\nb"]: expected a string, got a value tagged "!x"`},
		// What the YAML parser refuses without a place: the line and column
		// (in characters, as for every other error) of the offending byte.
		{"name: x\ntags: [\"\u00e9\xff\"]\n", "f.yaml:2:10: byte 0xff is not UTF-8; the file must be UTF-8 text"},
		{"name: x\n# \xc3\n", "f.yaml:2:3: byte 0xc3 is not UTF-8"},
		{"name: \"a\x00b\"\n", "f.yaml:1:9: a NUL byte; the file must be text"},
		{"name: a\x07\n", `f.yaml:1:8: control character U+0007 is not allowed in YAML; in a double-quoted string, write it as the escape "\x07"`},
		{"name: \"\u00e9\ufffe\"\n", "f.yaml:1:9: character U+FFFE is not allowed in YAML"},
		// A line break that YAML takes and git does not is refused, at the
		// line and column git would show: a reviewer would read one line
		// where agentbox reads two.
		{"name: a\rtags: [\x01]\n", "f.yaml:1:8: a carriage return (U+000D) without a line feed after it: YAML ends a line there and git does not"},
		{"name: a\u2028tags: [\x01]\n", "f.yaml:1:8: line separator U+2028: YAML ends a line there and git does not"},
		{"name: a\n# note\u0085tags: [x]\n", "f.yaml:2:7: next line U+0085: YAML ends a line there and git does not"},
		{"name: \"a\u2029b\"\n", `f.yaml:1:9: paragraph separator U+2029: YAML ends a line there and git does not; end lines with LF (or CR LF); in a double-quoted string, write it as the escape "\u2029"`},
		{"name: a\r\n\u00e9: \u2028\n", "f.yaml:2:4: line separator U+2028"},
		{"name: a\r\ntags: [\x7f]\n", "f.yaml:2:8: control character U+007F"},
		{"\xff\xfen\x00a\x00m\x00e\x00", "f.yaml:1:1: the file is UTF-16"},
		{"name: \u00e9\tx\n", "f.yaml:1:8: tab character"},
		// go.yaml.in/yaml/v3 numbers its parser's lines from 0, and leaves
		// out line 0; its scanner's from 1.
		{"tags: [::1]\n", "f.yaml:1: invalid YAML: did not find expected node content"},
		{"name: x\ntags: [::1]\n", "f.yaml:2: invalid YAML: did not find expected node content"},
		{"name: x\ntags:\n  - b\n  c: d\n", "f.yaml:3: invalid YAML: did not find expected '-' indicator"},
		{"name: x\ncount: @\n", "f.yaml:2: invalid YAML: found character that cannot start any token"},
		{"count: @\n", "f.yaml:1: invalid YAML: found character that cannot start any token"},
		{"name: x\ntags: [a, *x]\n", "f.yaml:2:11: alias *x names no anchor"},
		// Nothing after a key is "not set" for a section, a list or a map;
		// a scalar needs a value (an environment variable too).
		{"name: ~\n", "f.yaml:1:7: name: expected a string, got nothing (null); give it a value, or leave the key out for its default"},
		{"name:\ncount: 1\n", "f.yaml:1:6: name: expected a string, got nothing (null)"},
		{"tags: [a, ~]\n", "f.yaml:1:11: tags[1]: expected a string, got nothing (null)"},
		{"env: {X: ~}\n", `f.yaml:1:10: env.X: expected a string, got nothing (null); write a value, or "" for an empty one`},
	}
	for _, tt := range tests {
		var d testDoc
		_, err := Decode("f.yaml", []byte(tt.in), &d)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Decode(%q):\n got %v\nwant prefix %q", tt.in, err, tt.want)
		}
	}
}

// TestNullIsNotSet: nothing, or ~, after a key whose value is a section, a
// list or a map is the same as leaving the key out.
func TestNullIsNotSet(t *testing.T) {
	var d struct {
		Tags []string          `yaml:"tags"`
		Env  map[string]string `yaml:"env"`
		Sub  struct {
			Name *string `yaml:"name"`
		} `yaml:"sub"`
		Opt *[]string `yaml:"opt"`
	}
	if _, err := Decode("f.yaml", []byte("tags: ~\nenv:\nsub: null\nopt: ~\n"), &d); err != nil {
		t.Fatal(err)
	}
	if d.Tags != nil || d.Env != nil || d.Sub.Name != nil || d.Opt != nil {
		t.Errorf("decoded %+v", d)
	}
}

func TestDecodePositions(t *testing.T) {
	var d testDoc
	pos, err := Decode("f.yaml", []byte("name: x\ntags:\n  - a\n  - b\nenv: {K: v}\n"), &d)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]Pos{"name": {1, 7}, "tags[1]": {4, 5}, "env.K": {5, 10}} {
		if pos[path] != want {
			t.Errorf("pos[%q] = %v, want %v", path, pos[path], want)
		}
	}
	if *d.Name != "x" || len(d.Tags) != 2 || d.Env["K"] != "v" {
		t.Errorf("decoded %+v", d)
	}
}

func TestSuggest(t *testing.T) {
	for in, want := range map[string]string{"netwrok": "network", "imgae": "image", "x": "", "completely-else": ""} {
		if got := Suggest(in, []string{"network", "image", "env"}); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", in, got, want)
		}
	}
}
